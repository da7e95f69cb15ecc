"""Where the daemon's time goes per round trip, under a steady one-client echo load.

    python -m bench.mux.profile_daemon                   # CPU, context switches, page faults per round trip
    python -m bench.mux.profile_daemon --tool cprofile   # deterministic: calls and time per round trip
    python -m bench.mux.profile_daemon --tool py-spy     # sampling (pip install py-spy into the venv)
    python -m bench.mux.profile_daemon --tool strace     # system calls per round trip (needs strace)
    python -m bench.mux.profile_daemon --tool perf       # on-CPU samples: interpreter, kernel, libraries

The load is `echo_throughput`'s closed loop through `echo.sock` with the response
cache off; every figure is divided by the number of round trips measured, so it
reads as "what one request and its answer cost the daemon". cProfile slows
Python calls down about twofold: trust its call counts and proportions, and
take absolute times from the throughput benchmark's CPU-per-round-trip column.
`--daemon-env MALLOC_MMAP_THRESHOLD_=1048576` and the like try a setting
without touching the daemon. Reports go to bench/out/profile-<tool>.txt.
"""

from __future__ import annotations

import functools
import io
import os
import pstats
import re
import shlex
import shutil
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import anyio
from support.daemon_proc import DaemonProc, wait_until

from bench import CHECKOUT
from bench.daemon_launch import bench_daemon, config_text
from bench.mux import echo_throughput
from bench.runner import add_common_options, arg_parser, start_logging
from bench.stats import process_counters, write_atomic


class ProfileToolMissing(Exception):
    """The requested profiler is not installed."""


async def _load(
    daemon: DaemonProc, root: Path, *, clients: int, seconds: float, attach: list[str], signals: bool
) -> dict[str, Any]:
    """Run the echo load; the profiler sees the measured part only.

    `attach` (with {pid} and {seconds}) is a profiler process started for that
    part; `signals` switches profile_shim's cProfile on and off instead.
    """
    (root / ".git").mkdir(parents=True, exist_ok=True)
    params = echo_throughput.params_for(0, root)
    async with anyio.create_task_group() as tg:
        async with echo_throughput.daemon_echo(tg, daemon, root, clients) as conns:
            await echo_throughput.measure(conns, params, warmup_s=1.0, duration_s=1.0, pids={})
            profiler = None
            if attach:
                argv = [a.format(pid=daemon.pid, seconds=int(seconds) + 1) for a in attach]
                profiler = await anyio.open_process(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
                await anyio.sleep(1.0)  # attaching stops the process briefly; let it settle
            if signals:
                os.kill(daemon.pid, signal.SIGUSR1)
            before = process_counters(daemon.pid)
            outcome = await echo_throughput.measure(
                conns, params, warmup_s=0.0, duration_s=seconds, pids={"daemon": daemon.pid}
            )
            after = process_counters(daemon.pid)
            if signals:
                os.kill(daemon.pid, signal.SIGUSR2)
            outcome["daemon_per_round_trip"] = {
                k: round((after[k] - before[k]) * (1e6 if k == "cpu_s" else 1) / outcome["round_trips"], 2)
                for k in after
            }
            if profiler is not None:
                await profiler.wait()
        tg.cancel_scope.cancel()
    return outcome


def _cprofile_report(path: Path, measured: int, top: int) -> str:
    stats = pstats.Stats(str(path), stream=io.StringIO())
    raw: dict[Any, Any] = stats.stats  # type: ignore[attr-defined]
    # The signals and the load's end are not simultaneous: count the answers
    # routing saw. (A plain function: cProfile counts every resumption of a
    # coroutine as a call, so coroutines show more calls than they had.)
    routed = [v[1] for (f, _, name), v in raw.items() if name == "route_response" and f.endswith("server_routing.py")]
    round_trips = routed[0] if routed else measured
    rows = []
    for (filename, line, name), (_cc, ncalls, tottime, cumtime, _callers) in raw.items():
        per_rt = ncalls / round_trips
        # Installed packages first: the venv lives inside the checkout.
        where = re.sub(rf"^(.*/(site-packages|lib/python3\.\d+)|{re.escape(str(CHECKOUT))})/", "", filename)
        rows.append((tottime, cumtime, per_rt, f"{name} ({where}:{line})"))
    rows.sort(reverse=True)
    total_calls = sum(r[2] for r in rows)
    total_self = sum(r[0] for r in rows)
    areas: Counter[str] = Counter()
    for tottime, _cum, _per_rt, label in rows:
        areas[_area(label)] += tottime
    lines = [
        f"{round_trips} round trips; {total_calls:.0f} profiled calls and "
        f"{1e6 * total_self / round_trips:.0f} µs of profiled self time per round trip",
        "",
        "self time per round trip by area (epoll_wait is mostly waiting for the peers):",
        *(f"{1e6 * t / round_trips:10.1f}  {area}" for area, t in areas.most_common()),
        "",
        f"{'self µs/rt':>10} {'cum µs/rt':>10} {'calls/rt':>9}  function",
    ]
    for tottime, cumtime, per_rt, label in rows[:top]:
        lines.append(f"{1e6 * tottime / round_trips:10.1f} {1e6 * cumtime / round_trips:10.1f} {per_rt:9.2f}  {label}")
    return "\n".join(lines)


def _area(label: str) -> str:
    """Which layer a profiled function belongs to."""
    if "select.epoll" in label:
        return "epoll_wait (event loop idle + wake-up)"
    if "(daemon/" in label or "(adapters/" in label:
        return "lensmux daemon code"
    if "(anyio/" in label:
        return "anyio"
    if "(asyncio/" in label or "(selectors.py" in label or "(socket.py" in label:
        return "asyncio, selectors, socket (stdlib Python)"
    if "msgspec" in label:
        return "msgspec"
    if "(~:0)" in label:
        return "other C functions and system calls"
    return "other Python"


def _pyspy_report(path: Path, top: int) -> str:
    own: Counter[str] = Counter()
    inclusive: Counter[str] = Counter()
    total = 0
    for line in path.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        n = int(count)
        frames = stack.split(";")
        total += n
        own[frames[-1]] += n
        for frame in set(frames):
            inclusive[frame] += n
    lines = [f"{total} samples (idle excluded by py-spy)", "", "self %  function"]
    lines += [f"{100 * n / total:6.1f}  {f}" for f, n in own.most_common(top)]
    lines += ["", "inclusive %  function"]
    lines += [f"{100 * n / total:6.1f}  {f}" for f, n in inclusive.most_common(top * 2)]
    return "\n".join(lines)


def _strace_report(text: str, round_trips: int) -> str:
    lines = [f"{round_trips} round trips; calls per round trip by system call", ""]
    for row in text.splitlines():
        parts = row.split()
        if len(parts) >= 5 and parts[3].isdigit():
            lines.append(f"{int(parts[3]) / round_trips:8.2f}  {parts[-1]}")
    return "\n".join(lines)


def _perf_report(path: Path, top: int) -> str:
    def report(sort: str) -> list[str]:
        argv = [_tool_path("perf"), "report", "-i", str(path), "--sort", sort, "--stdio", "--percent-limit", "0.3"]
        text = subprocess.run(argv, capture_output=True, text=True).stdout
        return [line for line in text.splitlines() if line.strip() and not line.startswith("#")][:top]

    return "\n".join(["on-CPU samples by shared object:", *report("dso"), "", "by symbol:", *report("sym")])


def _tool_path(name: str) -> str:
    local = Path(sys.executable).parent / name
    found = str(local) if local.is_file() else shutil.which(name)
    if found is None:
        raise ProfileToolMissing(f"{name} is not installed")
    return found


def profile(
    tool: str, *, clients: int, seconds: float, top: int, out_dir: Path, env: dict[str, str], wrapper: list[str]
) -> str:
    """Run the load under `tool` (or none: "counters"); return the report."""
    work = out_dir / "work" / f"profile-{tool}"
    shutil.rmtree(work, ignore_errors=True)
    config = config_text(cache=False, echo=True)
    attach: list[str] = []
    raw_out = work / f"{tool}.out"
    if tool == "cprofile":
        wrapper = [*(wrapper or [sys.executable]), str(Path(__file__).with_name("profile_shim.py")), str(raw_out)]
    elif tool == "py-spy":
        attach = [_tool_path("py-spy"), "record", "-p", "{pid}", "-d", "{seconds}", "-r", "250", "-f", "raw"]
        attach += ["--nonblocking", "-o", str(raw_out)]
    elif tool == "strace":
        # -f: the daemon's event loop and its (idle) worker threads; -c: counts only.
        attach = [_tool_path("strace"), "-c", "-f", "-p", "{pid}", "-o", str(raw_out)]
        attach = ["timeout", "-s", "INT", "{seconds}", *attach]
    elif tool == "perf":
        # cpu-clock is a software event, so this works inside VMs without PMU access.
        attach = [_tool_path("perf"), "record", "-e", "cpu-clock", "-F", "1000", "-p", "{pid}", "-o", str(raw_out)]
        attach += ["--", "sleep", "{seconds}"]
    with bench_daemon(work / "daemon", config, wrapper=wrapper, extra_env=env) as daemon:
        outcome = anyio.run(
            functools.partial(
                _load,
                daemon,
                work / "root",
                clients=clients,
                seconds=seconds,
                attach=attach,
                signals=tool == "cprofile",
            )
        )
        if tool == "cprofile":
            wait_until(raw_out.exists, timeout=30, what="the daemon's profile")
    round_trips = int(outcome["round_trips"])
    per = outcome["daemon_per_round_trip"]
    head = (
        f"{tool}: {clients} client(s), {seconds:g} s, {outcome['round_trips_per_s']:.0f} round trips/s, "
        f"p50 {outcome['latency']['p50_us']:.0f} µs; daemon per round trip: {per['cpu_s']:.0f} µs CPU, "
        f"{per['context_switches']:.2f} context switches, {per['minor_faults']:.2f} minor page faults"
        f"{' (under the profiler)' if tool != 'counters' else ''}; extra daemon env {env or 'none'}"
        f"{'; daemon started with ' + shlex.join(wrapper) if wrapper else ''}\n"
    )
    if tool == "counters":
        return head
    if tool == "cprofile":
        return head + _cprofile_report(raw_out, round_trips, top)
    if tool == "py-spy":
        return head + _pyspy_report(raw_out, top)
    if tool == "perf":
        return head + _perf_report(raw_out, top)
    return head + _strace_report(raw_out.read_text(), round_trips)


def main(argv: list[str] | None = None) -> int:
    """Profile and save the report."""
    parser = arg_parser(__doc__)
    parser.add_argument("--tool", choices=("counters", "cprofile", "py-spy", "strace", "perf"), default="counters")
    parser.add_argument(
        "--daemon-env", action="append", default=[], metavar="NAME=VALUE", help="extra environment for the daemon"
    )
    parser.add_argument(
        "--daemon-wrapper",
        default="",
        metavar="COMMAND",
        help="run the daemon's console script with this command, e.g. a Python shim that installs uvloop",
    )
    parser.add_argument("--clients", type=int, default=1)
    parser.add_argument("--seconds", type=float, default=15.0)
    parser.add_argument("--top", type=int, default=40)
    add_common_options(parser)
    args = parser.parse_args(argv)
    start_logging(args.verbose)
    try:
        env = dict(item.split("=", 1) for item in args.daemon_env)
        report = profile(
            args.tool,
            clients=args.clients,
            seconds=args.seconds,
            top=args.top,
            out_dir=args.out.resolve(),
            env=env,
            wrapper=shlex.split(args.daemon_wrapper),
        )
    except ProfileToolMissing as exc:
        print(f"profile_daemon: {exc}", file=sys.stderr)
        return 1
    write_atomic(args.out / f"profile-{args.tool}.txt", report + "\n")
    print(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
