"""Request throughput through the daemon to a trivial echo server, against stdio straight to it.

A lean load generator (pre-encoded requests, a msgspec decode of each answer's
id) keeps the client's own cost small next to the daemon's. N virtual clients
each keep one request in flight (closed loop). Through lensmux each virtual
client has its own connection to `echo.sock`, as N editors would; the baseline
runs the same N loops over one stdio pipe to one echo server, so both sides
load the same single-threaded server with the same concurrency and the
difference is the daemon hop. Every round trip is two messages through the
daemon (request in, response out).
"""

from __future__ import annotations

import itertools
import logging
import os
import sys
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from subprocess import PIPE
from typing import Any

import anyio
import msgspec
from anyio.abc import ByteReceiveStream, ByteSendStream, TaskGroup
from anyio.streams.buffered import BufferedByteReceiveStream
from support.daemon_proc import DaemonProc

from bench.daemon_launch import ECHO_SERVER, server_pids, socket_path
from bench.stats import Summary, process_cpu_seconds

log = logging.getLogger(__name__)

_HEADER_END = b"\r\n\r\n"
_CALL_TIMEOUT = 30.0


class ThroughputBenchError(Exception):
    """The throughput benchmark lost its server or got a malformed answer."""


class _Head(msgspec.Struct):
    id: int | str | None = None


_head_decoder = msgspec.json.Decoder(_Head)


class EchoConnection:
    """One framed JSON-RPC connection shared by any number of closed-loop callers."""

    def __init__(self, send: ByteSendStream, receive: ByteReceiveStream, name: str) -> None:
        self.name = name
        self._send = send
        self._receive = BufferedByteReceiveStream(receive)
        self._lock = anyio.Lock()
        self._ids = itertools.count(1)
        self._waiting: dict[int, anyio.Event] = {}

    async def reader_task(self) -> None:
        """Wake each caller when its answer arrives; ends with the stream."""
        try:
            while True:
                header = await self._receive.receive_until(_HEADER_END, 8192)
                length = int(header.rpartition(b":")[2])
                head = _head_decoder.decode(await self._receive.receive_exactly(length))
                event = self._waiting.pop(head.id, None) if isinstance(head.id, int) else None
                if event is not None:
                    event.set()
        except (anyio.IncompleteRead, anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
            log.debug("%s: stream ended", self.name)
        finally:
            for event in self._waiting.values():
                event.set()

    async def call(self, method: bytes, params: bytes) -> None:
        """One request; returns when its answer has arrived."""
        rid = next(self._ids)
        body = b'{"jsonrpc":"2.0","id":%d,"method":"%b","params":%b}' % (rid, method, params)
        event = anyio.Event()
        self._waiting[rid] = event
        async with self._lock:
            await self._send.send(b"Content-Length: %d\r\n\r\n%b" % (len(body), body))
        # No per-call timeout: its timer would cost the client more than the daemon
        # spends on a message; `measure` bounds the whole run instead.
        await event.wait()

    async def notify(self, method: bytes, params: bytes) -> None:
        """One notification."""
        body = b'{"jsonrpc":"2.0","method":"%b","params":%b}' % (method, params)
        async with self._lock:
            await self._send.send(b"Content-Length: %d\r\n\r\n%b" % (len(body), body))

    async def initialize(self, root: Path) -> None:
        """The LSP handshake an editor would do for `root`."""
        params = msgspec.json.encode(
            {"processId": os.getpid(), "rootUri": root.as_uri(), "capabilities": {}, "clientInfo": {"name": "bench"}}
        )
        await self.call(b"initialize", params)
        await self.notify(b"initialized", b"{}")


@dataclass(slots=True)
class Tally:
    """Round trips completed while measuring, with their latencies."""

    measuring: bool = False
    latencies_ns: list[int] = field(default_factory=list)


async def _client_loop(conn: EchoConnection, params: bytes, tally: Tally, stop: anyio.Event) -> None:
    method = b"textDocument/hover"
    clock = time.perf_counter_ns
    while not stop.is_set():
        start = clock()
        await conn.call(method, params)
        if tally.measuring:
            tally.latencies_ns.append(clock() - start)


def _cpu(pids: Sequence[int]) -> list[float]:
    return [process_cpu_seconds(p) for p in pids]


async def measure(
    conns: Sequence[EchoConnection], params: bytes, *, warmup_s: float, duration_s: float, pids: dict[str, int]
) -> dict[str, Any]:
    """Run len(conns) closed loops; requests/s, latency and CPU per request of each process in `pids`."""
    tally = Tally()
    stop = anyio.Event()
    names = list(pids)
    with anyio.fail_after(warmup_s + duration_s + _CALL_TIMEOUT):
        async with anyio.create_task_group() as tg:
            for conn in conns:
                tg.start_soon(_client_loop, conn, params, tally, stop)
            await anyio.sleep(warmup_s)
            cpu_before = _cpu([pids[n] for n in names])
            own_before = time.process_time()
            start = time.perf_counter()
            tally.measuring = True
            await anyio.sleep(duration_s)
            tally.measuring = False
            elapsed = time.perf_counter() - start
            own = time.process_time() - own_before
            cpu_after = _cpu([pids[n] for n in names])
            stop.set()
    count = len(tally.latencies_ns)
    if not count:
        raise ThroughputBenchError("no round trip completed while measuring")
    cpu = {n: (after - before) for n, before, after in zip(names, cpu_before, cpu_after, strict=True)}
    cpu["client"] = own
    return {
        "round_trips": count,
        "round_trips_per_s": round(count / elapsed, 1),
        "messages_per_s": round(2 * count / elapsed, 1),
        "latency": Summary.of_ns(tally.latencies_ns).as_dict(),
        "cpu_us_per_round_trip": {n: round(1e6 * s / count, 1) for n, s in cpu.items()},
    }


@asynccontextmanager
async def stdio_echo(tg: TaskGroup, root: Path) -> AsyncIterator[tuple[EchoConnection, int]]:
    """The echo server spawned over stdio, initialized; yields the connection and its pid."""
    process = await anyio.open_process([sys.executable, str(ECHO_SERVER)], stdin=PIPE, stdout=PIPE, cwd=root)
    assert process.stdin is not None and process.stdout is not None
    conn = EchoConnection(process.stdin, process.stdout, "direct")
    tg.start_soon(conn.reader_task)
    try:
        await conn.initialize(root)
        yield conn, process.pid
    finally:
        with anyio.CancelScope(shield=True):
            await conn.call(b"shutdown", b"null")
            await conn.notify(b"exit", b"null")
            with anyio.move_on_after(5):
                await process.wait()
            if process.returncode is None:
                process.kill()
            await process.aclose()


@asynccontextmanager
async def daemon_echo(tg: TaskGroup, daemon: DaemonProc, root: Path, count: int) -> AsyncIterator[list[EchoConnection]]:
    """`count` initialized connections to the daemon's echo socket."""
    async with AsyncExitStack() as stack:
        conns: list[EchoConnection] = []
        for i in range(count):
            stream = await anyio.connect_unix(socket_path(daemon, "echo"))
            await stack.enter_async_context(stream)
            conn = EchoConnection(stream, stream, f"mux-{i}")
            tg.start_soon(conn.reader_task)
            await conn.initialize(root)
            conns.append(conn)
        yield conns


def params_for(payload_bytes: int, root: Path) -> bytes:
    """Hover-shaped request params, padded to about `payload_bytes` if that is larger."""
    base = {"textDocument": {"uri": (root / "src" / "main.c").as_uri()}, "position": {"line": 41, "character": 7}}
    encoded = msgspec.json.encode(base)
    if payload_bytes > len(encoded):
        base["padding"] = "x" * (payload_bytes - len(encoded) - len(b',"padding":""'))
        encoded = msgspec.json.encode(base)
    return encoded


async def run(
    daemon: DaemonProc,
    root: Path,
    *,
    clients: Sequence[int],
    trials: int,
    warmup_s: float,
    duration_s: float,
    payload_bytes: int,
) -> dict[str, Any]:
    """Throughput at each client count, alternating direct and daemon runs `trials` times."""
    (root / ".git").mkdir(parents=True, exist_ok=True)
    params = params_for(payload_bytes, root)
    results: dict[str, Any] = {"clients": list(clients), "trials": trials, "duration_s": duration_s}
    results["params_bytes"] = len(params)
    async with anyio.create_task_group() as tg:
        async with stdio_echo(tg, root) as (direct, direct_pid), daemon_echo(tg, daemon, root, max(clients)) as muxed:
            echo_pids = server_pids(daemon, "echo")
            if len(echo_pids) != 1:
                raise ThroughputBenchError(f"expected one echo instance in the daemon, found {echo_pids}")
            runs: dict[int, dict[str, list[dict[str, Any]]]] = {}
            for n in clients:
                runs[n] = {"direct": [], "lensmux": []}
                for trial in range(trials):
                    order = ("direct", "lensmux") if trial % 2 == 0 else ("lensmux", "direct")
                    for path in order:
                        if path == "direct":
                            outcome = await measure(
                                [direct] * n,
                                params,
                                warmup_s=warmup_s,
                                duration_s=duration_s,
                                pids={"server": direct_pid},
                            )
                        else:
                            outcome = await measure(
                                muxed[:n],
                                params,
                                warmup_s=warmup_s,
                                duration_s=duration_s,
                                pids={"daemon": daemon.pid, "server": echo_pids[0]},
                            )
                        runs[n][path].append(outcome)
                        log.info("%d clients, %s: %.0f round trips/s", n, path, outcome["round_trips_per_s"])
        tg.cancel_scope.cancel()
    results["runs"] = {str(n): _median_trial(r) for n, r in runs.items()}
    return results


def _median_trial(paths: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """The median trial of each path (by rate), all trials' rates, and the ratio of the medians."""
    out: dict[str, Any] = {}
    for path, trials in paths.items():
        ranked = sorted(trials, key=lambda t: t["round_trips_per_s"])
        median = ranked[len(ranked) // 2]
        out[path] = {**median, "all_rates": [t["round_trips_per_s"] for t in trials]}
    out["ratio"] = round(out["lensmux"]["round_trips_per_s"] / out["direct"]["round_trips_per_s"], 3)
    out["added_p50_us"] = round(out["lensmux"]["latency"]["p50_us"] - out["direct"]["latency"]["p50_us"], 1)
    return out
