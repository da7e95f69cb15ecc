"""Load against the fast echo server: N clients x M requests, through lensmux and straight to it.

The echo server (tests/fakes/echo_lsp_server.py) answers every request with
its params, and every request carries its own (client, seq) in them, so an
answer that reaches the wrong request is recognised. A fraction of requests
ask one of a few shared "hot" questions instead, so the daemon's cache and
coalescing of identical requests run under the same load. Routes:

- `socket`: one connection per client to the daemon's `echo.sock`;
- `bridge`: one `lensmux client echo` stdio bridge process per client;
- `direct`: the same lanes over one stdio pipe to one echo server, no daemon
  (the baseline: the same single-threaded server, the same load generator).
"""

from __future__ import annotations

import itertools
import logging
import random
import sys
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
from support.daemon_proc import DaemonProc
from support.lspclient import LspClient, LspClientError, path_uri

from bench.daemon_launch import ECHO_SERVER, server_pids, socket_path
from bench.mux.clangd_queries import DEFINITION, HOVER, REFERENCES, SYMBOLS
from bench.mux.load_lanes import Ask, Lane, Verdict, cache_delta, cache_methods, run_phase

log = logging.getLogger(__name__)

METHODS = (HOVER, DEFINITION, REFERENCES, SYMBOLS)
HOT_KEYS = 16
# Numbers the phases of this process, so no two phases ask the same question.
_PHASES = itertools.count(1)
DEADLINE_S = 120.0


def echo_check(asked: dict[str, Any]) -> Callable[[Any], Verdict]:
    """The judge of one echo answer: its own params back, or someone else's."""

    def check(result: Any) -> Verdict:
        if result == asked:
            return "ok"
        if isinstance(result, dict) and "textDocument" in result:
            return "misrouted"
        return "unexpected"

    return check


def echo_asks(client_no: int, count: int, root: Path, *, hot_fraction: float, seed: int, phase: str) -> list[Ask]:
    """The script of one client: `count` requests, each unique to (phase, client, seq) unless hot.

    The phase is part of every question, hot ones included, so no phase is
    answered from what an earlier one left in the daemon's cache.
    """
    rng = random.Random(seed * 100_003 + client_no)
    asks: list[Ask] = []
    for seq in range(count):
        method = METHODS[seq % len(METHODS)]
        params: dict[str, Any]
        if rng.random() < hot_fraction:
            key = rng.randrange(HOT_KEYS)
            params = {"textDocument": {"uri": path_uri(root / phase / "hot.c")}}
            if method != "textDocument/documentSymbol":
                params["position"] = {"line": key, "character": 0}
            else:
                params["textDocument"]["uri"] = path_uri(root / phase / f"hot{key}.c")
        else:
            params = {
                "textDocument": {"uri": path_uri(root / phase / f"file{client_no % 8}.c")},
                "lensmuxBench": {"phase": phase, "client": client_no, "seq": seq},
            }
            if method != "textDocument/documentSymbol":
                params["position"] = {"line": seq, "character": client_no}
        if method == "textDocument/references":
            params["context"] = {"includeDeclaration": True}
        asks.append(Ask(method, params, echo_check(params)))
    return asks


@asynccontextmanager
async def _initialized(
    root: Path, count: int, connect: Callable[[int], AbstractAsyncContextManager[LspClient]]
) -> AsyncIterator[list[LspClient]]:
    """`count` connections made by `connect(i)`, each initialized for `root`; shut down politely after."""
    async with AsyncExitStack() as stack:
        clients = []
        for i in range(count):
            client = await stack.enter_async_context(connect(i))
            await client.initialize(root)
            clients.append(client)
        yield clients
        await _shutdown_all(clients)


def socket_clients(daemon: DaemonProc, root: Path, count: int) -> AbstractAsyncContextManager[list[LspClient]]:
    """`count` initialized connections to the daemon's echo socket."""
    sock = socket_path(daemon, "echo")
    return _initialized(root, count, lambda i: LspClient.over_unix(sock, name=f"load-socket-{i}"))


def bridge_clients(daemon: DaemonProc, root: Path, count: int) -> AbstractAsyncContextManager[list[LspClient]]:
    """`count` initialized `lensmux client echo` bridge processes."""
    argv = daemon.client_argv("echo")
    return _initialized(root, count, lambda i: LspClient.over_process(argv, env=daemon.env, name=f"load-bridge-{i}"))


@asynccontextmanager
async def direct_client(root: Path) -> AsyncIterator[LspClient]:
    """One echo server spawned over stdio, initialized."""
    async with LspClient.over_process([sys.executable, str(ECHO_SERVER)], cwd=root, name="load-direct") as client:
        await client.initialize(root)
        yield client
        await _shutdown_all([client])


async def _shutdown_all(clients: Sequence[LspClient]) -> None:
    for client in clients:
        try:
            await client.shutdown_and_exit(timeout=30)
        except LspClientError as exc:
            log.warning("%s: shutdown failed: %s", client.name, exc)


def _lanes(
    conns: Sequence[LspClient], count: int, requests: int, root: Path, *, hot: float, seed: int, phase: str
) -> list[Lane]:
    """`count` lanes over `conns` (the direct route's lanes all share its one connection)."""
    return [
        Lane(
            f"{phase}-{i}",
            conns[i % len(conns)],
            echo_asks(i, requests, root, hot_fraction=hot, seed=seed, phase=phase),
        )
        for i in range(count)
    ]


async def run_route(
    route: str,
    daemon: DaemonProc,
    root: Path,
    *,
    clients: int,
    requests: int,
    inflight: int,
    hot_fraction: float,
    seed: int,
) -> dict[str, Any]:
    """One load phase of `clients` x `requests` on one route."""
    phase = f"{route}-{clients}-{next(_PHASES)}"
    if route == "direct":
        async with direct_client(root) as client:
            pid = client.pid
            assert pid is not None
            lanes = _lanes([client], clients, requests, root, hot=hot_fraction, seed=seed, phase=phase)
            out = await run_phase(lanes, inflight=inflight, deadline_s=DEADLINE_S, pids={"echo server": pid})
    else:
        opened = socket_clients if route == "socket" else bridge_clients
        async with opened(daemon, root, clients) as conns:
            lanes = _lanes(conns, clients, requests, root, hot=hot_fraction, seed=seed, phase=phase)
            pids = {"daemon": daemon.pid, "echo server": server_pids(daemon, "echo")[0]}
            before = await anyio.to_thread.run_sync(cache_methods, daemon, "echo")
            out = await run_phase(lanes, inflight=inflight, deadline_s=DEADLINE_S, pids=pids, rss_pid=daemon.pid)
            out["cache"] = cache_delta(before, await anyio.to_thread.run_sync(cache_methods, daemon, "echo"))
    out["route"] = route
    out["clients"] = clients
    out["requests_per_client"] = requests
    log.info(
        "echo %s %d x %d: %.0f req/s, accounting %s",
        route,
        clients,
        requests,
        out["throughput_per_s"],
        out["accounting"],
    )
    return out


async def run(
    daemons: Mapping[str, DaemonProc],
    root: Path,
    *,
    clients: int,
    requests: int,
    bridge_clients_n: int,
    inflight: int,
    hot_fraction: float,
    seed: int,
) -> dict[str, Any]:
    """Every echo phase: the big run direct, through the cached and the uncached daemon; then the bridges.

    `daemons` has "cache" (response cache on, what users get) and "nocache"
    (`[daemon.cache] enabled = false`, the baseline for the cache's cost and memory).
    """
    (root / ".git").mkdir(parents=True, exist_ok=True)
    phases: dict[str, Any] = {}
    plan = [("direct", clients, "cache"), ("socket", clients, "cache"), ("socket", clients, "nocache")]
    if bridge_clients_n:
        n = bridge_clients_n
        plan += [("direct", n, "cache"), ("socket", n, "cache"), ("bridge", n, "cache")]
    for route, n, which in plan:
        out = await run_route(
            route,
            daemons[which],
            root,
            clients=n,
            requests=requests,
            inflight=inflight,
            hot_fraction=hot_fraction,
            seed=seed,
        )
        out["daemon"] = which if route != "direct" else None
        phases[f"{route}-{n}" if which == "cache" or route == "direct" else f"{route}-{which}-{n}"] = out
    return {
        "clients": clients,
        "requests_per_client": requests,
        "bridge_clients": bridge_clients_n,
        "inflight_per_client": inflight,
        "hot_fraction": hot_fraction,
        "hot_keys": HOT_KEYS,
        "phases": phases,
    }
