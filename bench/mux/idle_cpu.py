"""What an idle daemon costs: CPU while a clangd and a pyright instance sit attached and unused.

    python -m bench.mux.idle_cpu                               # 60 s, this checkout's daemon
    python -m bench.mux.idle_cpu --baseline /tmp/old/pkg       # and a daemon of other code, side by side

Each daemon gets one editor connection to `clangd.sock` and one to `pyright.sock`
(small C and Python projects, one document open in each), waits until both
answer a hover, settles, and then nothing happens for `--seconds`: the daemon's
CPU over that window (its own process only; the servers are listed apart) and
its wake-ups (context switches) are what polling loops cost. With --baseline
both daemons idle during the same window, so the machine's load is shared.
"""

from __future__ import annotations

import contextlib
import sys
import time
from pathlib import Path
from typing import Any

import anyio
from support.daemon_proc import DaemonProc, descendants
from support.lspclient import LspClient
from support.projects import write_c_project, write_py_project

from bench.daemon_launch import bench_daemon, config_text
from bench.runner import add_common_options, arg_parser, result_header, save_result, start_logging
from bench.stats import load_average, process_counters

_CASES = (("clangd", write_c_project, "src/main.c", "c"), ("pyright", write_py_project, "demo/main.py", "python"))


async def _attach(daemon: DaemonProc, root: Path, stack: contextlib.AsyncExitStack) -> None:
    """One clangd and one pyright client with a document open, each answered once."""
    for server, writer, doc, language in _CASES:
        project = writer(root / server)
        (project / ".git").mkdir(exist_ok=True)
        client = await stack.enter_async_context(LspClient.over_unix(daemon.runtime_dir / f"{server}.sock"))
        await client.initialize(project)
        uri = await client.open(project / doc, language)
        position = {"textDocument": {"uri": uri}, "position": {"line": 0, "character": 0}}
        await client.request("textDocument/hover", position, timeout=120)


async def _idle(daemons: dict[str, DaemonProc], work: Path, settle: float, seconds: float) -> dict[str, Any]:
    async with contextlib.AsyncExitStack() as stack:
        for name, daemon in daemons.items():
            await _attach(daemon, work / f"projects-{name}", stack)
        await anyio.sleep(settle)
        before = {name: process_counters(d.pid) for name, d in daemons.items()}
        servers = {name: descendants(d.pid) for name, d in daemons.items()}
        threads_before = {name: _thread_ticks(d.pid) for name, d in daemons.items()}
        server_before = {name: sum(_cpu_or_zero(p) for p in pids) for name, pids in servers.items()}
        started = time.monotonic()
        await anyio.sleep(seconds)
        elapsed = time.monotonic() - started
        out: dict[str, Any] = {}
        for name, daemon in daemons.items():
            after = process_counters(daemon.pid)
            server_cpu = sum(_cpu_or_zero(p) for p in servers[name]) - server_before[name]
            threads = _thread_ticks(daemon.pid)
            main_ticks = threads.get(daemon.pid, 0) - threads_before[name].get(daemon.pid, 0)
            other_ticks = sum(threads.values()) - sum(threads_before[name].values()) - main_ticks
            out[name] = {
                "seconds": round(elapsed, 1),
                "daemon_cpu_ms": round(1e3 * (after["cpu_s"] - before[name]["cpu_s"]), 1),
                "daemon_cpu_percent": round(100 * (after["cpu_s"] - before[name]["cpu_s"]) / elapsed, 3),
                "daemon_wakeups_per_s": round(
                    (after["context_switches"] - before[name]["context_switches"]) / elapsed, 1
                ),
                "servers_cpu_ms": round(1e3 * server_cpu, 1),
                # Clock ticks (10 ms) of the event loop's thread and of the worker threads (file watchers).
                "main_thread_ms": main_ticks * 10,
                "other_threads_ms": other_ticks * 10,
            }
    return out


def _thread_ticks(pid: int) -> dict[int, int]:
    """utime + stime of each thread of `pid`, in clock ticks."""
    ticks: dict[int, int] = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            fields = (task / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        ticks[int(task.name)] = int(fields[11]) + int(fields[12])
    return ticks


def _cpu_or_zero(pid: int) -> float:
    try:
        return process_counters(pid)["cpu_s"]
    except OSError:
        return 0.0


def render(result: dict[str, Any]) -> str:
    """One row per daemon."""
    lines = [
        "| daemon | idle window s | daemon CPU ms | daemon CPU % | of which event loop thread ms | other threads ms "
        "| event loop thread context switches/s | servers' CPU ms |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for name, row in result["daemons"].items():
        lines.append(
            f"| {name} | {row['seconds']:g} | {row['daemon_cpu_ms']:,.1f} | {row['daemon_cpu_percent']:.3f} "
            f"| {row['main_thread_ms']} | {row['other_threads_ms']} "
            f"| {row['daemon_wakeups_per_s']:.1f} | {row['servers_cpu_ms']:,.1f} |"
        )
    machine = result["machine"]
    load = ", ".join(f"{x:.2f}" for x in machine.get("load_avg_at_end", []))
    return "\n".join(lines) + f"\n\n`{result['command']}`; load average at the end {load}\n"


def main(argv: list[str] | None = None) -> int:
    """Measure and save."""
    parser = arg_parser(__doc__)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--settle", type=float, default=10.0)
    parser.add_argument("--baseline", type=Path, help="PYTHONPATH of other lensmux code, idled alongside as `before`")
    add_common_options(parser)
    args = parser.parse_args(argv)
    start_logging(args.verbose)
    work = args.out.resolve() / "work" / "idle"
    work.mkdir(parents=True, exist_ok=True)
    result = result_header("bench.mux.idle_cpu")
    envs: dict[str, dict[str, str]] = {"lensmux": {}}
    if args.baseline:
        envs["before"] = {"PYTHONPATH": str(args.baseline.resolve())}
    with contextlib.ExitStack() as stack:
        daemons = {
            name: stack.enter_context(bench_daemon(work / f"daemon-{name}", config_text(), extra_env=env))
            for name, env in envs.items()
        }
        result["daemons"] = anyio.run(_idle, daemons, work, args.settle, args.seconds)
    result["machine"]["load_avg_at_end"] = load_average()
    report = render(result)
    save_result(args.out, "idle_cpu", result, report)
    print(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
