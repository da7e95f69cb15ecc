"""Agent sessions on a warm shared pyright against agents each spawning a pyright of their own.

    .venv/bin/python -m bench.mux.agent_sessions                                  # tornado and tiny, N = 1, 8
    .venv/bin/python -m bench.mux.agent_sessions --projects tiny --agents 2      # a quick look

An agent session behaves like Serena's SolidLSP with its pyright adapter
(bench/mux/agent_session.py): it spawns its client process, initializes without
`window.workDoneProgress`, waits for pyright's ready signal ("Found N source
files" or `pyright/endProgress`, 60 s at most), then asks cross-file questions
(references of a widely used function, a definition in another module) on files
it had not opened, asking again until the answer is complete, and stops.

Per project, in one run:
  1. the reference: a pyright of its own, after its ready signal, asked each
     question until two answers in a row agree; "complete" means those locations;
  2. one editor spawning a pyright of its own and doing every editor's part
     below (their files open, the first one's question), sampled once quiet: the
     baseline for what the editors add to the shared pyright (bench/mux/agent_editors.py);
  3. for each N: N agents each spawning `pyright-langserver --stdio` (the
     baseline: what agents do without lensmux; N > 1 in parallel);
  4. for each N: a fresh daemon, `--editors` editors attached over the socket
     (the first waits for pyright's ready line, opens a file and asks its own,
     different, cross-file question until complete, or with `--warm-with same`
     the agents' first; the second joins after and opens another file; each
     waits for its file's diagnostics, and the instance is warm once the editors
     have heard nothing for `--quiet` s), then N agents through
     `lensmux client pyright` bridges, in parallel.
Per session: spawn -> ready signal, spawn -> first complete answer of each question,
whether every answer equalled the reference. Memory: resident memory (VmRSS) and
proportional set size (Pss, shared pages divided among their processes) of the
process trees (each own pyright; the daemon with its pyright; the bridges apart),
at its peak and once every session has answered; the editor's own pyright once quiet.
Nothing here asserts a time.

Writes bench/out/agent_sessions-<time>.json, bench/out/agent_sessions.json and .md.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
from support.daemon_proc import VENV_BIN, DaemonProc

from bench.daemon_launch import DaemonLaunchFailed, bench_daemon, config_text, socket_path
from bench.fetch_corpus import CorpusError
from bench.mux.agent_editors import own_editor, quiet, shared_editor
from bench.mux.agent_memory import TreeSampler, pss_kib
from bench.mux.agent_questions import PROJECT_MAKERS, AgentProject
from bench.mux.agent_report import render
from bench.mux.agent_session import Gate, ReferenceUnsettled, agent_session, settle_reference
from bench.runner import add_common_options, arg_parser, finish, result_header, run_and_save
from bench.stats import memory_mib

MODULE = "bench.mux.agent_sessions"
PYRIGHT = [str(VENV_BIN / "pyright-langserver"), "--stdio"]


def _ints(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x.strip()]


def _parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = arg_parser(__doc__)
    parser.add_argument("--projects", default="tornado,tiny", help=f"comma-separated, of {', '.join(PROJECT_MAKERS)}")
    parser.add_argument("--agents", type=_ints, default=[1, 8], help="agent counts N, comma-separated")
    parser.add_argument("--editors", type=int, default=2, help="editors attached to the shared instance (>= 1)")
    parser.add_argument("--deadline", type=float, default=300.0, help="seconds an agent asks before giving up")
    parser.add_argument("--settle-pause", type=float, default=2.0, help="seconds between the reference's asks")
    parser.add_argument("--interval", type=float, default=0.5, help="seconds between memory samples")
    parser.add_argument(
        "--warm-with",
        choices=("other", "same"),
        default="other",
        help="the first editor's cross-file question: another symbol's references (default), or the agents' first",
    )
    parser.add_argument("--quiet", type=float, default=2.0, help="seconds of silence to the editors = warm")
    parser.add_argument("--skip-own", action="store_true", help="shared sessions only (no baselines)")
    parser.add_argument(
        "--prebind",
        choices=("on", "off"),
        default="on",
        help="the daemon's file-by-file parse-and-bind walk of pyright ([servers.pyright] prebind)",
    )
    parser.add_argument(
        "--node-options",
        default=None,
        help="NODE_OPTIONS for the daemon's pyright ([servers.pyright.env]); '' clears the configured ones",
    )
    parser.add_argument(
        "--request-first",
        choices=("on", "off"),
        default="on",
        help="an agent's question before its didOpen of the file ([daemon] request_first_window; off: -1)",
    )
    add_common_options(parser)
    args = parser.parse_args(argv)
    if args.editors < 1:
        parser.error("--editors must be at least 1: the shared instance is warmed by an editor")
    return args


def _own_env() -> dict[str, str]:
    # The daemon's servers see the venv first on PATH (support.daemon_proc.lensmux_env); so do these.
    return {"PATH": f"{VENV_BIN}:{os.environ.get('PATH', '')}"}


@dataclass(frozen=True, slots=True)
class Launch:
    """How a run's agents start their client process, and the memory group their processes count in."""

    argv: Sequence[str]
    env: Mapping[str, str]
    prefix: str
    group: str


async def _agents(
    launch: Launch,
    project: AgentProject,
    references: dict[str, Any],
    n: int,
    sampler: TreeSampler,
    *,
    deadline: float,
    on_answered: Callable[[], Awaitable[None]] | None = None,
) -> list[dict[str, Any]]:
    """N sessions at once; the sampler marks "answered" once all have answered, before any stops."""
    gate = Gate(n)
    results: list[dict[str, Any]] = [{} for _ in range(n)]
    started = time.monotonic()

    async def one(i: int) -> None:
        results[i] = await agent_session(
            f"{launch.prefix}-{i}",
            launch.argv,
            project,
            references,
            env=launch.env,
            gate=gate,
            on_spawn=lambda pid: sampler.add(launch.group, pid),
            deadline_s=deadline,
        )

    async def coordinator() -> None:
        await gate.opened.wait()
        await sampler.mark("answered")
        if on_answered is not None:
            await on_answered()
        gate.release()

    async with anyio.create_task_group() as tg:
        tg.start_soon(coordinator)
        for i in range(n):
            tg.start_soon(one, i)
    for r in results:
        r["spawned_at"] = round(r.pop("spawned_at", started) - started, 3)
    return results


async def _own(project: AgentProject, references: dict[str, Any], n: int, args: argparse.Namespace) -> dict[str, Any]:
    sampler = TreeSampler({"servers": set()}, interval=args.interval)
    async with anyio.create_task_group() as tg:
        tg.start_soon(sampler.run)
        launch = Launch(PYRIGHT, _own_env(), "own", "servers")
        sessions = await _agents(launch, project, references, n, sampler, deadline=args.deadline)
        sampler.stop()
    return {"sessions": sessions, "memory": sampler.as_dict()}


async def _shared(
    daemon: DaemonProc, project: AgentProject, references: dict[str, Any], n: int, args: argparse.Namespace
) -> dict[str, Any]:
    sampler = TreeSampler({"daemon": {daemon.pid}, "bridges": set()}, interval=args.interval)
    out: dict[str, Any] = {}

    async def status() -> None:
        instances = await anyio.to_thread.run_sync(daemon.instances, "pyright")
        out["instances_at_answered"] = [_instance_summary(i) for i in instances]
        # The daemon's own process apart from its servers: VmRSS now, VmHWM its peak so far, Pss now.
        out["daemon_process_mib_at_answered"] = {**memory_mib(daemon.pid), "Pss": round(pss_kib(daemon.pid) / 1024, 1)}

    async with anyio.create_task_group() as tg:
        tg.start_soon(sampler.run)
        async with AsyncExitStack() as stack:
            socket = socket_path(daemon, "pyright")
            editors = [
                await shared_editor(stack, socket, project, e, references=references, args=args)
                for e in range(args.editors)
            ]
            out["editors"] = [summary for _, summary in editors]
            out["quiet_wait_s"] = await quiet([client for client, _ in editors], args.quiet)
            await sampler.mark("warm")
            launch = Launch(daemon.client_argv("pyright"), daemon.env, "shared", "bridges")
            out["sessions"] = await _agents(
                launch, project, references, n, sampler, deadline=args.deadline, on_answered=status
            )
        sampler.stop()
    out["memory"] = sampler.as_dict()
    return out


def _instance_summary(instance: dict[str, Any]) -> dict[str, Any]:
    keep = (
        "pid",
        "clients",
        "memory_mb",
        "server_processes",
        "requests_served",
        "restarts",
        "warming",
        "prebind",
        "cache",
    )
    return {k: instance.get(k) for k in keep}


def _project_run(project: AgentProject, args: argparse.Namespace, work: Path) -> dict[str, Any]:
    out: dict[str, Any] = {
        "project": {
            "name": project.name,
            "description": project.description,
            "root": str(project.root),
            "py_files": project.files,
            "py_lines": project.lines,
            "questions": [
                {"label": q.label, "path": q.path, "position": q.position(project.root)} for q in project.questions
            ],
            "editor_question": project.editor_question.label,
        }
    }
    reference = anyio.run(_settle, project, args)
    out["reference"] = {k: v for k, v in reference.items() if k != "answers"}
    out["reference"]["answers"] = reference["answers"]
    references = reference["answers"]
    if not args.skip_own:
        out["editor_own"] = anyio.run(own_editor, PYRIGHT, _own_env(), project, references, args)
    out["runs"] = {}
    for n in args.agents:
        if not args.skip_own:
            out["runs"][f"own-{n}"] = anyio.run(_own, project, references, n, args)
        config = _shared_config(args)
        with bench_daemon(work / f"daemon-{project.name}-{n}", config) as daemon:
            out["runs"][f"shared-{n}"] = anyio.run(_shared, daemon, project, references, n, args)
    return out


def _shared_config(args: argparse.Namespace) -> str:
    """The benchmark daemon's configuration with this run's pyright settings."""
    config = config_text() + "\n[servers.pyright]\n"
    if args.request_first == "off":
        config = config.replace("[daemon]\n", "[daemon]\nrequest_first_window = -1.0\n", 1)
    if args.prebind == "off":
        config += "prebind = false\n"
    if args.node_options is not None:
        config += f"\n[servers.pyright.env]\nNODE_OPTIONS = {json.dumps(args.node_options)}\n"
    return config


async def _settle(project: AgentProject, args: argparse.Namespace) -> dict[str, Any]:
    return await settle_reference(PYRIGHT, project, _own_env(), pause=args.settle_pause, limit=args.deadline)


def run(args: argparse.Namespace) -> dict[str, Any]:
    """The reference, then own and shared sessions for every N, per project."""
    started = time.monotonic()
    work = args.out / "work" / "agent_sessions"
    result = result_header(MODULE, pyright=True)
    result["settings"] = {
        "agents": args.agents,
        "editors": args.editors,
        "deadline_s": args.deadline,
        "memory_interval_s": args.interval,
        "warm_with": args.warm_with,
        "quiet_s": args.quiet,
        "prebind": args.prebind,
        "node_options": args.node_options,
        "request_first": args.request_first,
    }
    result["projects"] = {}
    for name in [p.strip() for p in args.projects.split(",") if p.strip()]:
        if name not in PROJECT_MAKERS:
            raise CorpusError(f"unknown project {name!r} (known: {', '.join(PROJECT_MAKERS)})")
        result["projects"][name] = _project_run(PROJECT_MAKERS[name](work), args, work)
    return finish(result, started)


def main(argv: list[str] | None = None) -> int:
    """Run and save the benchmark."""
    errors = (CorpusError, DaemonLaunchFailed, ReferenceUnsettled)
    return run_and_save(_parse_args(argv), "agent_sessions", run, render, errors)


if __name__ == "__main__":
    sys.exit(main())
