"""The monorepo benchmark's users after indexing: an edit, a second editor and an agent on the same root.

- The edit is bench/index/freshness.py's routes (an unsaved buffer, a save, a write
  with no editor) on tornado's two largest files inside the monorepo: how soon a
  made-up function is among the search answers.
- The second editor is a clangd editor on brotli's encoder (the C side of the
  monorepo): its documentSymbol and hover answers, timed.
- The agent is bench/mux/agent_session.py's Serena-like session through the
  `lensmux client pyright` bridge, asking the agent benchmark's tornado questions
  at their paths inside the monorepo, after a reference settled on the same shared
  server; it runs while the second editor holds its file open.
"""

from __future__ import annotations

import argparse
import dataclasses
import time
from typing import Any

import anyio
from support.daemon_proc import DaemonProc
from support.lspclient import LspClient

from bench.daemon_launch import socket_path
from bench.index.freshness import ROUTES, _all_routes, summarize, target_files
from bench.index.monorepo_tree import Tree
from bench.mux.agent_questions import TORNADO_QUESTIONS, AgentProject
from bench.mux.agent_session import Gate, agent_session, settle_reference
from bench.stats import load_average

# The second editor's file and the names it hovers (brotli's encoder, the largest C file of the 100k tree).
C_FILE = "c/enc/encode.c"
C_HOVERS = ("BrotliEncoderCompressStream", "BrotliEncoderCreateInstance")


async def freshness(daemon: DaemonProc, tree: Tree, trials: int) -> dict[str, Any]:
    """Every freshness route, `trials` times each, on tornado's two largest files."""
    files = target_files(tree.directory("tornado"), 2)
    args = argparse.Namespace(routes=ROUTES, trials=trials, poll_ms=50, timeout=30.0, settle=1.0, seed=23)
    routes = await _all_routes(daemon, tree.root, files, args)
    return {
        "files": [f.relative_to(tree.root).as_posix() for f in files],
        "routes": {r["route"]: {**summarize(r["trials"]), "load": r["load_avg_before"]} for r in routes},
        "trials": routes,
    }


def _position(text: str, name: str) -> dict[str, int]:
    for number, line in enumerate(text.split("\n")):
        column = line.find(name)
        if column >= 0:
            return {"line": number, "character": column}
    return {"line": 0, "character": 0}


async def _timed(client: LspClient, method: str, params: dict[str, Any]) -> dict[str, Any]:
    started = time.perf_counter()
    answer = await client.request(method, params, timeout=120)
    size = len(answer) if isinstance(answer, list) else int(answer is not None)
    return {"method": method, "ms": round((time.perf_counter() - started) * 1000, 1), "items": size}


async def _c_editor(daemon: DaemonProc, tree: Tree, holding: anyio.Event, done: anyio.Event) -> dict[str, Any]:
    """A clangd editor opens brotli's encoder and asks about it; keeps it open until `done`."""
    path = tree.directory("brotli") / C_FILE
    text = path.read_text(encoding="utf-8")
    out: dict[str, Any] = {"file": path.relative_to(tree.root).as_posix(), "asks": []}
    started = time.perf_counter()
    async with LspClient.over_unix(socket_path(daemon, "clangd"), name="second-editor") as editor:
        await editor.initialize(tree.root)
        out["initialized_s"] = round(time.perf_counter() - started, 3)
        uri = await editor.open(path, "c", text)
        doc = {"textDocument": {"uri": uri}}
        out["asks"].append(await _timed(editor, "textDocument/documentSymbol", doc))
        for name in C_HOVERS:
            out["asks"].append(await _timed(editor, "textDocument/hover", {**doc, "position": _position(text, name)}))
        holding.set()
        await done.wait()
        await editor.close(uri)
        await editor.shutdown_and_exit(timeout=30)
    return out


def agent_project(tree: Tree) -> AgentProject:
    """The agent benchmark's tornado questions, at their paths inside the monorepo."""
    prefix = tree.directory("tornado").relative_to(tree.root).as_posix()
    questions = tuple(dataclasses.replace(q, path=f"{prefix}/{q.path}") for q in TORNADO_QUESTIONS)
    return AgentProject(
        "monorepo", tree.root, "the monorepo", sum(tree.files.values()), tree.code_lines, questions, questions[1], ()
    )


async def editor_and_agent(daemon: DaemonProc, tree: Tree, deadline_s: float) -> dict[str, Any]:
    """The clangd editor holds its file while an agent asks pyright its questions through the bridge."""
    project = agent_project(tree)
    argv = daemon.client_argv("pyright")
    out: dict[str, Any] = {"load": load_average()}
    holding, done = anyio.Event(), anyio.Event()
    results: dict[str, Any] = {}

    async def editor() -> None:
        results["editor"] = await _c_editor(daemon, tree, holding, done)

    async with anyio.create_task_group() as tg:
        tg.start_soon(editor)
        await holding.wait()
        reference = await settle_reference(argv, project, daemon.env, pause=1.0, limit=deadline_s)
        out["reference"] = {k: v for k, v in reference.items() if k != "answers"}
        gate = Gate(1)
        pids: list[int] = []

        async def agent() -> None:
            results["agent"] = await agent_session(
                "agent",
                argv,
                project,
                reference["answers"],
                env=daemon.env,
                gate=gate,
                on_spawn=pids.append,
                deadline_s=deadline_s,
            )

        tg.start_soon(agent)
        await gate.opened.wait()
        out["instances_with_both"] = instances(daemon)
        gate.release()
        done.set()
    out.update(results)
    return out


def instances(daemon: DaemonProc) -> list[dict[str, Any]]:
    """Each live server instance: its memory (the memory watch's figure), restarts and recycles."""
    keep = ("server", "pid", "state", "root", "uptime_s", "memory_mb", "recycles", "restarts", "last_exit", "clients")
    return [{k: i.get(k) for k in keep} for i in daemon.instances()]


def run_users(daemon: DaemonProc, tree: Tree, args: argparse.Namespace) -> dict[str, Any]:
    """The edit, then the second editor with the agent."""
    out: dict[str, Any] = {}

    async def both() -> None:
        out["freshness"] = await freshness(daemon, tree, args.fresh_trials)
        out["editor_and_agent"] = await editor_and_agent(daemon, tree, args.agent_deadline)

    anyio.run(both)
    return out
