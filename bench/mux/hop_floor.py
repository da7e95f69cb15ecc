"""The floor under the daemon: what any Python process in the middle costs on this machine.

    python -m bench.mux.hop_floor            # direct vs byte splicer vs lensmux, one client, interleaved

Three routes to the echo server, measured alternately with the same closed-loop
client: straight over stdio; through a minimal splicer (asyncio protocols that
copy bytes between a Unix socket and the server's pipes without parsing them);
and through lensmux. The splicer is the cheapest thing a Python daemon could
do per message, so "lensmux minus splicer" is what the daemon's own design
costs and "splicer minus direct" is what the extra process hop costs here.

The splicer uses bare asyncio protocols on purpose, not anyio streams: it is a
yardstick for the event-loop machinery, not project code.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio

from bench import CHECKOUT
from bench.daemon_launch import ECHO_SERVER, bench_daemon, config_text
from bench.mux import echo_throughput
from bench.runner import add_common_options, arg_parser, start_logging
from bench.stats import load_average, process_counters, write_atomic


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
        assert isinstance(transport, asyncio.Transport)
        self.task = asyncio.ensure_future(self._start(transport))

    async def _start(self, client: asyncio.Transport) -> None:
        loop = asyncio.get_running_loop()
        argv = [sys.executable, str(ECHO_SERVER)]
        server, _ = await loop.subprocess_exec(
            lambda: _ServerPipes(client), *argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE
        )
        stdin = server.get_pipe_transport(0)
        assert isinstance(stdin, asyncio.WriteTransport)
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


def _splicer_process(path: Path) -> subprocess.Popen[bytes]:
    path.unlink(missing_ok=True)
    proc = subprocess.Popen([sys.executable, "-m", "bench.mux.hop_floor", "--splice", str(path)], cwd=CHECKOUT)
    deadline = time.monotonic() + 30
    while not path.exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            raise SplicerFailed(f"splicer did not start (exit status {proc.poll()})")
        time.sleep(0.05)
    return proc


async def _connect(path: Path, root: Path, tg: anyio.abc.TaskGroup) -> echo_throughput.EchoConnection:
    stream = await anyio.connect_unix(path)
    conn = echo_throughput.EchoConnection(stream, stream, path.name)
    tg.start_soon(conn.reader_task)
    await conn.initialize(root)
    return conn


async def _compare(daemon_sock: Path, splice_sock: Path, pids: dict[str, int], args: argparse.Namespace) -> Any:
    root = args.out / "work" / "hop-root"
    (root / ".git").mkdir(parents=True, exist_ok=True)
    params = echo_throughput.params_for(0, root)
    samples: dict[str, list[dict[str, Any]]] = {"direct": [], "splicer": [], "lensmux": []}
    async with anyio.create_task_group() as tg:
        async with echo_throughput.stdio_echo(tg, root) as (direct, _pid):
            routes = {"direct": direct, "splicer": await _connect(splice_sock, root, tg)}
            routes["lensmux"] = await _connect(daemon_sock, root, tg)
            names = list(routes)
            for trial in range(args.trials):
                for name in names[trial % 3 :] + names[: trial % 3]:
                    middle = pids.get(name)
                    before = process_counters(middle) if middle else None
                    outcome = await echo_throughput.measure(
                        [routes[name]], params, warmup_s=0.5, duration_s=args.duration, pids={}
                    )
                    if middle and before:
                        after = process_counters(middle)
                        outcome["middle_cpu_us_per_round_trip"] = round(
                            1e6 * (after["cpu_s"] - before["cpu_s"]) / outcome["round_trips"], 1
                        )
                    samples[name].append(outcome)
        tg.cancel_scope.cancel()
    return samples


def _table(samples: dict[str, list[dict[str, Any]]]) -> str:
    lines = [
        "| route | p50 µs (median of trials) | p99 µs | added p50 over direct | CPU µs per round trip in the middle |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]

    def median(values: list[float]) -> float:
        return sorted(values)[len(values) // 2]

    base = median([t["latency"]["p50_us"] for t in samples["direct"]])
    for name, trials in samples.items():
        p50 = median([t["latency"]["p50_us"] for t in trials])
        p99 = median([t["latency"]["p99_us"] for t in trials])
        cpu = [t["middle_cpu_us_per_round_trip"] for t in trials if "middle_cpu_us_per_round_trip" in t]
        lines.append(
            f"| {name} | {p50:,.0f} | {p99:,.0f} | {p50 - base:+,.0f} | {f'{median(cpu):,.0f}' if cpu else '-'} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Measure, or (with --splice) be the splicer."""
    parser = arg_parser(__doc__)
    parser.add_argument("--splice", metavar="SOCKET", help=argparse.SUPPRESS)
    parser.add_argument("--trials", type=int, default=5)
    parser.add_argument("--duration", type=float, default=3.0)
    add_common_options(parser)
    args = parser.parse_args(argv)
    if args.splice:
        asyncio.run(_serve_splicer(args.splice))
        return 0
    start_logging(args.verbose)
    args.out = args.out.resolve()
    work = args.out / "work"
    splice_sock = work / "splice.sock"
    work.mkdir(parents=True, exist_ok=True)
    splicer = _splicer_process(splice_sock)
    try:
        with bench_daemon(work / "daemon-hop", config_text(cache=False, echo=True)) as daemon:
            pids = {"splicer": splicer.pid, "lensmux": daemon.pid}
            samples = anyio.run(_compare, daemon.runtime_dir / "echo.sock", splice_sock, pids, args)
    finally:
        splicer.terminate()
        splicer.wait()
    table = _table(samples)
    load = ", ".join(f"{x:.2f}" for x in load_average())
    report = f"{table}\n\n{args.trials} trials of {args.duration:g} s per route; load average at the end {load}\n"
    write_atomic(args.out / "hop_floor.json", json.dumps(samples, indent=1) + "\n")
    write_atomic(args.out / "hop_floor.md", report)
    print(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
