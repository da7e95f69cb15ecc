"""Where one agent's novel cross-file question spends its time on a warm shared pyright (issue 21).

    .venv/bin/python -m bench.mux.agent_timeline --runs 3
    .venv/bin/python -m bench.mux.agent_timeline --runs 3 --order request-first   # what the file's check costs

Per run, a fresh benchmark daemon whose pyright runs behind bench/mux/stdio_relay.py
(every frame between the daemon and pyright stamped as it passes), warmed as
bench/mux/agent_sessions.py warms it (two editors, *references IOLoop*, quiet), then
one agent session through a `lensmux client pyright` bridge: initialize, ready line,
didOpen of tornado/escape.py, *references utf8*, didClose. Printed per run: the
agent's marks and pyright's frames in ms from the agent's spawn, pyright's CPU while
the question was at it (its main thread, where all its JavaScript runs, and V8's
worker threads), and whether the opened file's diagnostics left pyright before the
answer. `--order request-first` asks before opening (then opens and closes), which no
agent does: it shows what answering costs without the check pyright runs on the file
an agent has just opened. The relay adds a copy per frame: the figures here attribute
time; spawn → answer is measured by bench/mux/agent_sessions.py. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import anyio
from support.lspclient import LspClient

from bench import OUT_DIR
from bench.daemon_launch import bench_daemon, config_text, socket_path
from bench.mux.agent_editors import quiet, shared_editor
from bench.mux.agent_questions import PROJECT_MAKERS, canonical
from bench.mux.agent_session import AGENT_CAPABILITIES, AGENT_INIT_OPTIONS, wait_ready
from bench.mux.agent_sessions import PYRIGHT, _settle
from bench.runner import arg_parser
from bench.stats import load_average

RELAY = Path(__file__).resolve().parent / "stdio_relay.py"


def _parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = arg_parser(__doc__)
    parser.add_argument("--runs", type=int, default=1, help="fresh daemons, one agent each")
    parser.add_argument("--order", choices=("open-first", "request-first"), default="open-first")
    parser.add_argument("--node-options", default=None, help="NODE_OPTIONS for the daemon's pyright")
    parser.add_argument("--prebind", choices=("on", "off"), default="on")
    parser.add_argument(
        "--request-first",
        choices=("on", "off"),
        default="on",
        help="the daemon's [daemon] request_first_window (off: -1)",
    )
    parser.add_argument("--out", type=Path, default=OUT_DIR / "agent_timeline")
    args = parser.parse_args(argv)
    # What agent_sessions' editor and settle helpers read.
    args.warm_with, args.deadline, args.settle_pause = "other", 300.0, 2.0
    return args


def _config(args: argparse.Namespace, relay_log: Path) -> str:
    argv = [str(RELAY), str(relay_log), *PYRIGHT]
    config = config_text() + "\n[servers.pyright]\n"
    if args.request_first == "off":
        config = config.replace("[daemon]\n", "[daemon]\nrequest_first_window = -1.0\n", 1)
    config += f"command = {json.dumps(sys.executable)}\nargs = {json.dumps(argv)}\n"
    if args.prebind == "off":
        config += "prebind = false\n"
    if args.node_options is not None:
        config += f"\n[servers.pyright.env]\nNODE_OPTIONS = {json.dumps(args.node_options)}\n"
    return config


def _descendants(pid: int) -> list[int]:
    out = [pid]
    children = Path(f"/proc/{pid}/task/{pid}/children")
    if children.exists():
        for child in children.read_text().split():
            out += _descendants(int(child))
    return out


def _node_pid(server_pid: int) -> int:
    for pid in _descendants(server_pid):
        argv0 = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0]
        if argv0.endswith(b"node"):
            return pid
    raise LookupError(f"no node process under pid {server_pid}")


def _thread_cpu_ns(pid: int) -> dict[str, tuple[str, int]]:
    """Per thread of `pid`: its name and the ns it has run on a CPU (schedstat)."""
    out: dict[str, tuple[str, int]] = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            name = Path(f"/proc/{pid}/task/{tid}/comm").read_text().strip()
            ran = int(Path(f"/proc/{pid}/task/{tid}/schedstat").read_text().split()[0])
        except (OSError, ValueError):
            continue
        out[tid] = (name, ran)
    return out


def _cpu_ms(before: dict[str, tuple[str, int]], after: dict[str, tuple[str, int]], main: str) -> dict[str, float]:
    spent = {tid: ran - before.get(tid, (name, 0))[1] for tid, (name, ran) in after.items()}
    return {
        "main_ms": round(spent.get(main, 0) / 1e6, 1),
        "workers_ms": round(sum(ns for tid, ns in spent.items() if tid != main) / 1e6, 1),
    }


async def _one_run(args: argparse.Namespace, references: dict[str, Any], index: int) -> dict[str, Any]:
    project = PROJECT_MAKERS["tornado"](args.out / "work")
    question = project.questions[0]
    relay_log = args.out / f"relay-{index}.jsonl"
    relay_log.unlink(missing_ok=True)
    out: dict[str, Any] = {"load_before": load_average()}
    with bench_daemon(args.out / f"daemon-{index}", _config(args, relay_log)) as daemon:
        async with AsyncExitStack() as stack:
            socket = socket_path(daemon, "pyright")
            editors = [
                await shared_editor(stack, socket, project, e, references=references, args=args) for e in range(2)
            ]
            await quiet([client for client, _ in editors], 2.0)
            instance = daemon.instances("pyright")[0]
            out["walk"] = instance.get("prebind")
            node = _node_pid(int(instance["pid"]))
            before = _thread_cpu_ns(node)
            marks: dict[str, float] = {"spawn": time.monotonic()}
            argv = daemon.client_argv("pyright")
            async with LspClient.over_process(argv, env=daemon.env, cwd=project.root, name="agent") as agent:
                await agent.initialize(
                    project.root,
                    capabilities=AGENT_CAPABILITIES,
                    process_id=os.getpid(),
                    initialization_options=AGENT_INIT_OPTIONS,
                )
                marks["initialized"] = time.monotonic()
                await wait_ready(agent)
                marks["ready"] = time.monotonic()
                path = project.root / question.path
                if args.order == "open-first":
                    uri = await agent.open(path, "python", version=0)
                marks["asked"] = time.monotonic()
                answer = await agent.request(question.method, question.params(project.root), timeout=60)
                marks["answered"] = time.monotonic()
                out["cpu"] = _cpu_ms(before, _thread_cpu_ns(node), str(node))
                if args.order == "request-first":
                    uri = await agent.open(path, "python", version=0)
                await agent.close(uri)
                # The opened file's diagnostics, and the empty set after its close.
                await anyio.sleep(1.0)
                marks["stopping"] = time.monotonic()
                await agent.shutdown_and_exit(timeout=30)
            out["complete"] = canonical(answer) == canonical(references[question.label])
    out["load_after"] = load_average()
    out["marks_ms"] = {k: round(1000 * (v - marks["spawn"]), 1) for k, v in marks.items()}
    out["frames"] = _frames(relay_log, marks["spawn"], marks["stopping"])
    out.update(_summary(out["frames"]))
    return out


def _frames(relay_log: Path, since: float, until: float) -> list[dict[str, Any]]:
    """The frames between pyright and the daemon from the agent's spawn until it began to stop."""
    frames = [json.loads(line) for line in relay_log.read_text().splitlines()]
    kept = [f for f in frames if since <= f["t"] <= until and f.get("d") in ("to", "from")]
    for f in kept:
        f["ms"] = round(1000 * (f.pop("t") - since), 1)
    return kept


def _summary(frames: list[dict[str, Any]]) -> dict[str, Any]:
    """pyright's time from the agent's first message to the answer, and when the file's diagnostics left it.

    Diagnostics a fraction of a millisecond after the answer left in the same write: pyright checked
    the file before it wrote the answer (its writes wait for a setImmediate, its analysis timer fires first).
    """
    first = next(f["ms"] for f in frames if f["d"] == "to" and str(f.get("method", "")).startswith("textDocument/"))
    asked = next(f for f in frames if f["d"] == "to" and f.get("method") == "textDocument/references")
    answer = next(
        f["ms"] for f in frames if f["d"] == "from" and f.get("id") == asked["id"] and f.get("method") is None
    )
    diagnostics = [f["ms"] for f in frames if f.get("method") == "textDocument/publishDiagnostics" and f["d"] == "from"]
    return {
        "pyright_ms": round(answer - first, 1),
        "first_diagnostics_after_answer_ms": round(diagnostics[0] - answer, 1) if diagnostics else None,
    }


def _print(run: dict[str, Any], index: int, order: str) -> None:
    print(f"run {index} ({order}), load {run['load_before']} -> {run['load_after']}, walk {run['walk']}")
    for name, ms in run["marks_ms"].items():
        print(f"  {ms:8.1f} ms  agent {name}")
    for f in run["frames"]:
        extra = Path(f["uri"]).name if f.get("uri") else f.get("detail") or ""
        if "diagnostics" in f:
            extra = f"{extra} ({f['diagnostics']} diagnostics)"
        print(f"  {f['ms']:8.1f} ms  {f['d']:4s} pyright  id={f.get('id')} {f.get('method')} {extra}")
    cpu = run["cpu"]
    print(
        f"  pyright {run['pyright_ms']} ms from the agent's first message to its answer; CPU meanwhile: main thread"
        f" {cpu['main_ms']} ms, V8 workers {cpu['workers_ms']} ms; the file's first diagnostics"
        f" {run['first_diagnostics_after_answer_ms']} ms after the answer; complete {run['complete']}"
    )


async def _main(args: argparse.Namespace) -> list[dict[str, Any]]:
    project = PROJECT_MAKERS["tornado"](args.out / "work")
    references = (await _settle(project, args))["answers"]
    runs = []
    for index in range(args.runs):
        run = await _one_run(args, references, index)
        _print(run, index, args.order)
        runs.append(run)
    return runs


def main(argv: list[str] | None = None) -> int:
    """Run and print; the runs also go to OUT/agent_timeline.json."""
    args = _parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    runs = anyio.run(_main, args)
    (args.out / "agent_timeline.json").write_text(json.dumps({"order": args.order, "runs": runs}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
