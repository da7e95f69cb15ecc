"""The stdio bridge's floor: `lensmux client` against a bare stdio ↔ socket splicer of the same shape.

    python -m bench.mux.bridge_routes SOCKET LOOP     # be the bare splicer (hop_floor starts it)

An editor that spawns `lensmux client` talks to it over two pipes, and the bridge
talks to the daemon's Unix socket. `bench.mux.hop_floor` measures three such routes
to the same daemon (lensmux on uvloop when it runs both loops): the bridge of this
checkout (`bridge`), the bridge of `--baseline` code (`bridge-before`), and a bare
splicer (`stdio-splice-<loop>`: asyncio protocols copying stdin to the socket and
the socket to stdout, no parsing). Each is compared with the daemon's socket route
in the same run: "bridge minus socket" is what the bridge costs, "splicer minus
socket" the floor of any Python process in that place.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from subprocess import PIPE
from typing import Any, cast

import anyio
from anyio.abc import TaskGroup
from support.daemon_proc import LENSMUX

from bench import CHECKOUT
from bench.mux import echo_throughput


class _Forward(asyncio.Protocol):
    """Writes whatever arrives to another transport; stops the loop when its side ends."""

    def __init__(self, done: asyncio.Future[None]) -> None:
        self.peer: asyncio.WriteTransport | None = None
        self.done = done

    def data_received(self, data: bytes) -> None:
        assert self.peer is not None
        self.peer.write(data)

    def eof_received(self) -> bool:
        if not self.done.done():
            self.done.set_result(None)
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self.eof_received()


async def _splice(path: str) -> None:
    loop = asyncio.get_running_loop()
    done: asyncio.Future[None] = loop.create_future()
    from_socket, from_stdin = _Forward(done), _Forward(done)
    # Each side's peer is set before that side can receive anything.
    from_socket.peer, _ = await loop.connect_write_pipe(asyncio.BaseProtocol, os.fdopen(sys.stdout.fileno(), "wb", 0))
    sock, _ = await loop.create_unix_connection(lambda: from_socket, path)
    # uvloop's transports implement the interface without subclassing asyncio's.
    from_stdin.peer = cast("asyncio.WriteTransport", sock)
    await loop.connect_read_pipe(lambda: from_stdin, os.fdopen(sys.stdin.fileno(), "rb", 0))
    await done


def run_splicer(path: str, loop: str) -> None:
    """Be the bare stdio ↔ socket splicer until either side ends."""
    if loop == "uvloop":
        import uvloop

        uvloop.run(_splice(path))
    else:
        asyncio.run(_splice(path))


def argvs(
    socket: Path, runtime_dir: Path, loop: str, baseline: Path | None
) -> dict[str, tuple[list[str], dict[str, str]]]:
    """Route name -> (argv, extra environment) of each process an editor would spawn."""
    bridge = [LENSMUX, "client", "echo", "--runtime-dir", str(runtime_dir), "--no-autostart"]
    routes = {
        "bridge": (bridge, {}),
        f"stdio-splice-{loop}": (
            [sys.executable, "-m", "bench.mux.bridge_routes", str(socket), loop],
            {"PYTHONPATH": str(CHECKOUT)},
        ),
    }
    if baseline is not None:
        routes["bridge-before"] = (bridge, {"PYTHONPATH": str(baseline.resolve())})
    return routes


@asynccontextmanager
async def spawned(
    tg: TaskGroup, argv: Sequence[str], env: Mapping[str, str], root: Path, name: str
) -> AsyncIterator[tuple[echo_throughput.EchoConnection, int]]:
    """An initialized echo connection over the stdio of `argv`; yields it and the process id."""
    process = await anyio.open_process(list(argv), stdin=PIPE, stdout=PIPE, env={**os.environ, **env}, cwd=root)
    assert process.stdin is not None and process.stdout is not None
    conn = echo_throughput.EchoConnection(process.stdin, process.stdout, name)
    tg.start_soon(conn.reader_task)
    try:
        await conn.initialize(root)
        yield conn, process.pid
    finally:
        with anyio.CancelScope(shield=True):
            await process.stdin.aclose()
            with anyio.move_on_after(5):
                await process.wait()
            if process.returncode is None:
                process.kill()
            await process.aclose()


def _median(values: list[float]) -> float:
    return sorted(values)[len(values) // 2]


def _per_trial_ratio(trials: list[dict[str, Any]], floor: list[dict[str, Any]]) -> float:
    """Median over trials of p50 / the floor's p50 in the same trial (trials are interleaved)."""
    ratios = [t["latency"]["p50_us"] / f["latency"]["p50_us"] for t, f in zip(trials, floor, strict=False)]
    return _median(ratios) if ratios else float("nan")


def table(runs: dict[str, list[dict[str, Any]]], socket_route: str) -> str:
    """Each stdio route against the socket route it goes through, and against the bare splicer."""
    names = [n for n in runs if n == "bridge" or n.startswith(("bridge-", "stdio-splice-"))]
    if not names or socket_route not in runs:
        return ""
    base = _median([t["latency"]["p50_us"] for t in runs[socket_route]])
    added = {n: _median([t["latency"]["p50_us"] for t in runs[n]]) - base for n in names}
    splicer = next((n for n in names if n.startswith("stdio-splice-")), None)
    lines = [
        f"**stdio routes, 1 client, all through {socket_route}**",
        "",
        f"| route | p50 µs | added p50 over {socket_route} | p50 / bare stdio splicer's, per trial | messages/s "
        "| CPU µs per round trip in the bridge process | context switches per round trip |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for n in names:
        trials = runs[n]
        cpu = [t["middle_cpu_us_per_round_trip"] for t in trials if "middle_cpu_us_per_round_trip" in t]
        sw = [t["middle_switches_per_round_trip"] for t in trials if "middle_switches_per_round_trip" in t]
        ratio = f"{_per_trial_ratio(trials, runs[splicer]):.2f}" if splicer else "-"
        lines.append(
            f"| {n} | {_median([t['latency']['p50_us'] for t in trials]):,.0f} | {added[n]:+,.0f} | {ratio} "
            f"| {_median([t['messages_per_s'] for t in trials]):,.0f} "
            f"| {f'{_median(cpu):,.0f}' if cpu else '-'} | {f'{_median(sw):.1f}' if sw else '-'} |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    run_splicer(sys.argv[1], sys.argv[2])
