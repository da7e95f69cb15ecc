"""The floor under the daemon: what any Python process in the middle costs, per event loop.

    python -m bench.mux.hop_floor                          # direct, splicers and lensmux, both loops, interleaved
    python -m bench.mux.hop_floor --clients 1,10           # and throughput at 10 clients
    python -m bench.mux.hop_floor --baseline /tmp/old/pkg  # plus a daemon (and a bridge) of other code (its PYTHONPATH)
    python -m bench.mux.hop_floor --baseline /tmp/old/pkg --baseline-loops asyncio,uvloop  # that daemon on both loops

Routes to the echo server, measured alternately with the same closed-loop client:
straight over stdio (`direct`); through a minimal splicer (`splice-asyncio`,
`splice-uvloop`: asyncio protocols that copy bytes between a Unix socket and the
server's pipes without parsing them, on the stdlib loop or uvloop); and through
lensmux on each loop (`lensmux-asyncio`, `lensmux-uvloop`, chosen with
LENSMUX_EVENT_LOOP). The splicer is the cheapest thing a Python daemon could do
per message, so "lensmux minus splicer" on the same loop is what the daemon's
own design costs, and "splicer minus direct" what the extra process hop costs.

What the floor includes: a third process to wake per message each way, a Unix
socket instead of a pipe at the client, and the splicer's own CPU; not the
client's or the server's cost, which direct pays too. With more than one client,
splicers are left out (each of their connections has its own server) and the
lensmux routes are compared with direct by messages per second.

The stdio bridge (`lensmux client`) is measured the same way against a bare
stdio ↔ socket splicer, both in front of the same daemon (bench/mux/bridge_routes.py).

The splicer uses bare asyncio protocols on purpose, not anyio streams: it is a
yardstick for the event-loop machinery, not project code.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, cast

import anyio

from bench import CHECKOUT
from bench.daemon_launch import ECHO_SERVER, bench_daemon, config_text
from bench.mux import bridge_routes, echo_throughput
from bench.runner import add_common_options, arg_parser, result_header, save_result, start_logging
from bench.stats import load_average, process_counters

LOOPS = ("asyncio", "uvloop")
# The routes of the first tables; the stdio ones have their own (bridge_routes.table).
_FLOOR_ROUTES = {"direct"}
_FLOOR_PREFIXES = ("splice-", "lensmux-", "before-")


class SplicerFailed(Exception):
    """The reference splicer process did not come up."""


class _ServerPipes(asyncio.SubprocessProtocol):
    def __init__(self, client: asyncio.Transport) -> None:
        self.client = client

    def pipe_data_received(self, fd: int, data: bytes) -> None:
        if fd == 1:
            self.client.write(data)


class _Splice(asyncio.Protocol):
    """One client connection spliced to its own echo server process."""

    def __init__(self) -> None:
        self.pending: list[bytes] | None = []
        self.stdin: asyncio.WriteTransport | None = None
        self.task: asyncio.Future[None] | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports implement the interface without subclassing asyncio's.
        self.task = asyncio.ensure_future(self._start(transport))  # type: ignore[arg-type]

    async def _start(self, client: asyncio.Transport) -> None:
        loop = asyncio.get_running_loop()
        argv = [sys.executable, str(ECHO_SERVER)]
        server, _ = await loop.subprocess_exec(
            lambda: _ServerPipes(client), *argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE
        )
        stdin = cast("asyncio.WriteTransport", server.get_pipe_transport(0))
        for chunk in self.pending or []:
            stdin.write(chunk)
        self.pending, self.stdin = None, stdin

    def data_received(self, data: bytes) -> None:
        if self.stdin is None:
            assert self.pending is not None
            self.pending.append(data)
        else:
            self.stdin.write(data)


async def _serve_splicer(path: str) -> None:
    server = await asyncio.get_running_loop().create_unix_server(_Splice, path)
    await server.serve_forever()


def _splicer_process(path: Path, loop: str) -> subprocess.Popen[bytes]:
    path.unlink(missing_ok=True)
    argv = [sys.executable, "-m", "bench.mux.hop_floor", "--splice", str(path), "--splice-loop", loop]
    proc = subprocess.Popen(argv, cwd=CHECKOUT)
    deadline = time.monotonic() + 30
    while not path.exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            raise SplicerFailed(f"{loop} splicer did not start (exit status {proc.poll()})")
        time.sleep(0.05)
    return proc


def _run_splicer(path: str, loop: str) -> None:
    if loop == "uvloop":
        import uvloop

        uvloop.run(_serve_splicer(path))
    else:
        asyncio.run(_serve_splicer(path))


async def _connect(path: Path, root: Path, tg: anyio.abc.TaskGroup, name: str) -> echo_throughput.EchoConnection:
    stream = await anyio.connect_unix(path)
    conn = echo_throughput.EchoConnection(stream, stream, name)
    tg.start_soon(conn.reader_task)
    await conn.initialize(root)
    return conn


async def _measure_route(
    conns: list[echo_throughput.EchoConnection], params: bytes, middle: int | None, duration: float
) -> dict[str, Any]:
    before = process_counters(middle) if middle else None
    outcome = await echo_throughput.measure(conns, params, warmup_s=0.5, duration_s=duration, pids={})
    if middle and before:
        after = process_counters(middle)
        trips = outcome["round_trips"]
        outcome["middle_cpu_us_per_round_trip"] = round(1e6 * (after["cpu_s"] - before["cpu_s"]) / trips, 1)
        switches = after["context_switches"] - before["context_switches"]
        outcome["middle_switches_per_round_trip"] = round(switches / trips, 2)
    return outcome


StdioRoutes = dict[str, tuple[list[str], dict[str, str]]]


async def _compare(sockets: dict[str, Path], pids: dict[str, int], stdio: StdioRoutes, args: argparse.Namespace) -> Any:
    """Every route at every client count, in a rotating order, `trials` times; single-connection routes at 1 only."""
    root = args.out / "work" / "hop-root"
    (root / ".git").mkdir(parents=True, exist_ok=True)
    params = echo_throughput.params_for(0, root)
    most = max(args.clients)
    samples: dict[str, dict[str, list[dict[str, Any]]]] = {}
    async with anyio.create_task_group() as tg, contextlib.AsyncExitStack() as stack:
        async with echo_throughput.stdio_echo(tg, root) as (direct, _pid):
            routes: dict[str, list[echo_throughput.EchoConnection]] = {"direct": [direct] * most}
            for name, sock in sockets.items():
                count = 1 if name.startswith("splice") else most
                routes[name] = [await _connect(sock, root, tg, f"{name}-{i}") for i in range(count)]
            single = {name for name in routes if name.startswith("splice")} | set(stdio)
            for name, (argv, env) in stdio.items():
                conn, pids[name] = await stack.enter_async_context(bridge_routes.spawned(tg, argv, env, root, name))
                routes[name] = [conn]
            for n in args.clients:
                names = [r for r in routes if n == 1 or r not in single]
                runs = samples[str(n)] = {r: [] for r in names}
                for trial in range(args.trials):
                    shift = trial % len(names)
                    for name in names[shift:] + names[:shift]:
                        outcome = await _measure_route(routes[name][:n], params, pids.get(name), args.duration)
                        runs[name].append(outcome)
            await stack.aclose()
        tg.cancel_scope.cancel()
    return samples


def _median(values: list[float]) -> float:
    return sorted(values)[len(values) // 2]


def _table(n: str, runs: dict[str, list[dict[str, Any]]]) -> str:
    lines = [
        f"**{n} client{'s' if n != '1' else ''}**",
        "",
        "| route | p50 µs | p99 µs | added p50 over direct | added / same-loop splicer's | messages/s | vs direct "
        "| CPU µs per round trip in the middle | context switches per round trip |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    base = _median([t["latency"]["p50_us"] for t in runs["direct"]])
    base_rate = _median([t["messages_per_s"] for t in runs["direct"]])
    added = {name: _median([t["latency"]["p50_us"] for t in trials]) - base for name, trials in runs.items()}
    for name, trials in runs.items():
        p50 = _median([t["latency"]["p50_us"] for t in trials])
        p99 = _median([t["latency"]["p99_us"] for t in trials])
        rate = _median([t["messages_per_s"] for t in trials])
        floor = added.get(f"splice-{name.rpartition('-')[2]}")
        vs_floor = f"{added[name] / floor:.2f}" if floor and name != "direct" and floor > 0 else "-"
        cpu = [t["middle_cpu_us_per_round_trip"] for t in trials if "middle_cpu_us_per_round_trip" in t]
        sw = [t["middle_switches_per_round_trip"] for t in trials if "middle_switches_per_round_trip" in t]
        lines.append(
            f"| {name} | {p50:,.0f} | {p99:,.0f} | {added[name]:+,.0f} | {vs_floor} | {rate:,.0f} "
            f"| {rate / base_rate:.2f} | {f'{_median(cpu):,.0f}' if cpu else '-'} "
            f"| {f'{_median(sw):.1f}' if sw else '-'} |"
        )
    return "\n".join(lines)


def render(result: dict[str, Any]) -> str:
    """The tables of one run, with the command, machine and load."""
    tables = [
        _table(n, {k: v for k, v in runs.items() if k in _FLOOR_ROUTES or k.startswith(_FLOOR_PREFIXES)})
        for n, runs in result["samples"].items()
    ]
    if "1" in result["samples"]:
        bridges = bridge_routes.table(result["samples"]["1"], result.get("bridge_daemon", ""))
        tables += [bridges] if bridges else []
    machine = result["machine"]
    load = ", ".join(f"{x:.2f}" for x in machine.get("load_avg_at_end", []))
    load_start = ", ".join(f"{x:.2f}" for x in machine.get("load_avg_at_start", []))
    return (
        "\n\n".join(tables)
        + f"\n\n`{result['command']}`: {result['trials']} trials of {result['duration_s']:g} s per route, medians;"
        f" load average {load_start} at the start, {load} at the end"
        f" ({machine.get('cpu', '?')}, {machine.get('nproc', '?')} cores, Python {machine.get('python', '?')})\n"
    )


def main(argv: list[str] | None = None) -> int:
    """Measure, or (with --splice) be a splicer."""
    parser = arg_parser(__doc__)
    parser.add_argument("--splice", metavar="SOCKET", help=argparse.SUPPRESS)
    parser.add_argument("--splice-loop", choices=LOOPS, default="asyncio", help=argparse.SUPPRESS)
    parser.add_argument("--trials", type=int, default=5)
    parser.add_argument("--duration", type=float, default=3.0)
    parser.add_argument("--clients", type=lambda v: [int(x) for x in v.split(",")], default=[1])
    parser.add_argument("--loops", type=lambda v: v.split(","), default=list(LOOPS), help="asyncio,uvloop")
    parser.add_argument(
        "--baseline", type=Path, help="PYTHONPATH of other lensmux code: `before-asyncio`, `bridge-before`"
    )
    parser.add_argument(
        "--baseline-loops",
        type=lambda v: v.split(","),
        default=["asyncio"],
        help="event loops to run the --baseline daemon on (`before-<loop>`; default asyncio)",
    )
    parser.add_argument("--no-bridge", action="store_true", help="leave out the stdio routes")
    add_common_options(parser)
    args = parser.parse_args(argv)
    if args.splice:
        _run_splicer(args.splice, args.splice_loop)
        return 0
    start_logging(args.verbose)
    args.out = args.out.resolve()
    work = args.out / "work"
    work.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    result = result_header("bench.mux.hop_floor")
    result.update(trials=args.trials, duration_s=args.duration)
    daemons: dict[str, dict[str, str]] = {f"lensmux-{loop}": {"LENSMUX_EVENT_LOOP": loop} for loop in args.loops}
    if args.baseline:
        for loop in args.baseline_loops:
            daemons[f"before-{loop}"] = {"PYTHONPATH": str(args.baseline.resolve()), "LENSMUX_EVENT_LOOP": loop}
    splicers = {f"splice-{loop}": _splicer_process(work / f"splice-{loop}.sock", loop) for loop in args.loops}
    sockets = {name: work / f"{name}.sock" for name in splicers}
    pids = {name: proc.pid for name, proc in splicers.items()}
    runtime_dirs: dict[str, Path] = {}
    try:
        with contextlib.ExitStack() as stack:
            for name, env in daemons.items():
                daemon = stack.enter_context(
                    bench_daemon(work / f"daemon-{name}", config_text(cache=False, echo=True), extra_env=env)
                )
                sockets[name] = daemon.runtime_dir / "echo.sock"
                pids[name] = daemon.pid
                runtime_dirs[name] = daemon.runtime_dir
            # The stdio routes go through the last loop's daemon (uvloop, the default).
            stdio: StdioRoutes = {}
            if not args.no_bridge:
                result["bridge_daemon"] = through = f"lensmux-{args.loops[-1]}"
                stdio = bridge_routes.argvs(sockets[through], runtime_dirs[through], args.loops[-1], args.baseline)
            result["samples"] = anyio.run(_compare, sockets, pids, stdio, args)
    finally:
        for proc in splicers.values():
            proc.terminate()
            proc.wait()
    result["elapsed_s"] = round(time.monotonic() - started, 1)
    result["machine"]["load_avg_at_end"] = load_average()
    report = render(result)
    save_result(args.out, "hop_floor", result, report)
    print(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
