"""The editors of the agent-sessions benchmark: on the shared instance, and one with a pyright of its own.

On the shared instance (bench/mux/agent_sessions.py) `--editors` editors warm pyright
before the agents come: the first waits for pyright's ready line, opens the first of the
project's editor files, asks its cross-file question until the answer is complete and
waits for its file's diagnostics; each next one joins later, opens the next file and
waits for that file's diagnostics. The shared pyright so holds the editors' files and
answers, which no agent's own pyright ever does.

`own_editor` is the baseline for that part of the shared pyright's memory: ONE editor with
a pyright of its own doing exactly what the editors do together (the same files open,
the same question, the same capabilities), sampled once it has heard nothing for
`--quiet` s, as the shared instance is before the agents start.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Mapping, Sequence
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import anyio
from support.lspclient import LspClient

from bench.mux.agent_memory import TreeSampler
from bench.mux.agent_questions import AgentProject, Question
from bench.mux.agent_session import ask_until_complete, wait_ready


def warm_question(project: AgentProject, warm_with: str) -> Question:
    """The first editor's question: the project's editor question, or with `same` the agents' first."""
    return project.questions[0] if warm_with == "same" else project.editor_question


async def hold_file(
    client: LspClient,
    project: AgentProject,
    index: int,
    out: dict[str, Any],
    *,
    started: float,
    references: dict[str, Any],
    args: argparse.Namespace,
) -> float:
    """Editor `index`'s part: open its file; the first also asks its question; then its file's diagnostics.

    Returns when those diagnostics came, in seconds from `started`.
    """
    uri = await client.open(project.root / project.editor_files[index % len(project.editor_files)], "python")
    if index == 0:
        question = warm_question(project, args.warm_with)
        deadline = started + args.deadline
        reference = references[question.label]
        warm = await ask_until_complete(client, project.root, question, reference, spawned=started, deadline=deadline)
        out["warm_question"] = question.label
        out["warm"] = warm
    # pyright checks an open file and then publishes its diagnostics: the editor's file is analysed.
    await client.wait_notification("textDocument/publishDiagnostics", lambda p: p.get("uri") == uri, timeout=120)
    return round(time.monotonic() - started, 3)


async def shared_editor(
    stack: AsyncExitStack,
    socket: Path,
    project: AgentProject,
    index: int,
    *,
    references: dict[str, Any],
    args: argparse.Namespace,
) -> tuple[LspClient, dict[str, Any]]:
    """An editor over the daemon's socket: ready line, then its part (`hold_file`)."""
    started = time.monotonic()
    name = f"editor-{index}"
    client = await stack.enter_async_context(LspClient.over_unix(socket, name=name))
    await client.initialize(project.root)
    signal = await wait_ready(client)
    out: dict[str, Any] = {"name": name, "ready_signal": signal, "ready_s": round(time.monotonic() - started, 3)}
    at = await hold_file(client, project, index, out, started=started, references=references, args=args)
    out["diagnostics_s"] = at
    return client, out


async def quiet(clients: Sequence[LspClient], quiet_s: float, limit: float = 60.0) -> float:
    """Wait until no editor has received anything for `quiet_s` seconds (at most `limit`); the seconds waited."""
    started = time.monotonic()
    seen, since = -1, started
    while time.monotonic() - started < limit:
        count = sum(len(c.messages) for c in clients)
        if count != seen:
            seen, since = count, time.monotonic()
        elif time.monotonic() - since >= quiet_s:
            break
        await anyio.sleep(0.1)
    return round(time.monotonic() - started, 3)


async def own_editor(
    argv: Sequence[str],
    env: Mapping[str, str],
    project: AgentProject,
    references: dict[str, Any],
    args: argparse.Namespace,
) -> dict[str, Any]:
    """One editor spawning its own pyright and doing every editor's part; its pyright's memory once quiet."""
    sampler = TreeSampler({"servers": set()}, interval=args.interval)
    started = time.monotonic()
    files = [project.editor_files[i % len(project.editor_files)] for i in range(args.editors)]
    out: dict[str, Any] = {"name": "editor-own", "files": files, "diagnostics_s": []}
    async with anyio.create_task_group() as tg:
        tg.start_soon(sampler.run)
        async with LspClient.over_process(argv, env=env, cwd=project.root, name="editor-own") as client:
            if client.pid is not None:
                sampler.add("servers", client.pid)
            await client.initialize(project.root)
            out["ready_signal"] = await wait_ready(client)
            out["ready_s"] = round(time.monotonic() - started, 3)
            for index in range(args.editors):
                at = await hold_file(client, project, index, out, started=started, references=references, args=args)
                out["diagnostics_s"].append(at)
            out["quiet_wait_s"] = await quiet([client], args.quiet)
            # The point the shared instance is sampled as "warm", just before the agents come.
            await sampler.mark("warm")
            await client.shutdown_and_exit(timeout=30)
        sampler.stop()
    out["memory"] = sampler.as_dict()
    return out
