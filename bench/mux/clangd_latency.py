"""Warm clangd request latency, straight over stdio and through lensmux, interleaved.

Every route (clangd spawned by the client, the daemon's `clangd.sock`, the
`lensmux client` stdio bridge) is driven by the same LSP client, has its own
copy of the corpus (so two clangd processes never share an index directory)
and gets the same queries in the same order. A round sends each query to every
route back to back, rotating which route goes first, so machine noise lands on
all routes alike and request i of one route pairs with request i of another.
"""

from __future__ import annotations

import gc
import json
import logging
import os
import time
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from support.lspclient import LspClient, LspClientError, path_uri

from bench.fetch_corpus import Corpus
from bench.mux.clangd_queries import DEFINITION, HOVER, REFERENCES, REQUEST_TIMEOUT, SYMBOLS, Query, spread
from bench.stats import Added, Summary, paired_median_us, process_cpu_seconds

log = logging.getLogger(__name__)

METHODS = (SYMBOLS, DEFINITION, REFERENCES, HOVER)
BACKGROUND_INDEX_TOKEN = "backgroundIndexProgress"
FUNCTION_KIND = 12


class LatencyBenchError(Exception):
    """The latency benchmark could not set up or run its routes."""


@dataclass(frozen=True, slots=True)
class RouteSpec:
    """How one route reaches clangd: a process to spawn or a socket, and its corpus copy."""

    name: str
    description: str
    corpus: Corpus
    argv: Sequence[str] = ()
    socket: Path | None = None
    env: dict[str, str] | None = None
    process_id: int | None = None
    initialization_options: dict[str, Any] | None = None
    # For daemon routes: whether the daemon's adapter still sees the index running.
    indexing: Callable[[], bool] | None = None


@dataclass(slots=True)
class Route:
    """A connected, warmed-up route and the latencies measured on it."""

    spec: RouteSpec
    client: LspClient
    ready_after_s: float = 0.0
    samples: dict[str, list[int]] = field(default_factory=lambda: {m: [] for m in METHODS})


@asynccontextmanager
async def connect(spec: RouteSpec) -> AsyncIterator[Route]:
    """Open the route, initialize it for its corpus, and shut it down politely afterwards."""
    if spec.socket is not None:
        opened = LspClient.over_unix(spec.socket, name=f"bench-{spec.name}")
    else:
        opened = LspClient.over_process(spec.argv, env=spec.env, cwd=spec.corpus.root, name=f"bench-{spec.name}")
    async with opened as client:
        await client.initialize(
            spec.corpus.root,
            process_id=spec.process_id,
            initialization_options=spec.initialization_options,
            timeout=REQUEST_TIMEOUT,
        )
        try:
            yield Route(spec, client)
        finally:
            with anyio.move_on_after(10, shield=True):
                try:
                    await client.shutdown_and_exit(timeout=10)
                except (LspClientError, OSError) as exc:
                    log.warning("%s: shutdown failed: %s", spec.name, exc)


def _index_state(client: LspClient) -> str:
    """'none', 'running' or 'done' from the background index's progress notifications."""
    state = "none"
    for params in client.notifications_of("$/progress"):
        if isinstance(params, dict) and params.get("token") == BACKGROUND_INDEX_TOKEN:
            kind = (params.get("value") or {}).get("kind")
            state = "running" if kind in {"begin", "report"} else "done" if kind == "end" else state
    return state


async def open_and_index(route: Route, *, quiet_s: float, timeout_s: float) -> None:
    """Open the benchmark files and wait for clangd's background index to finish.

    A copy indexed by an earlier run may announce no index work at all, so
    `quiet_s` seconds without a `begin` count as an idle index.
    """
    started = time.monotonic()
    for relative in route.spec.corpus.files:
        await route.client.open(route.spec.corpus.path(relative), "c")
    probe = route.spec.indexing
    with anyio.fail_after(timeout_s):
        while True:
            state = _index_state(route.client)
            waited = time.monotonic() - started
            idle = state == "done" or (state == "none" and waited >= quiet_s)
            if idle and (probe is None or not await anyio.to_thread.run_sync(probe)):
                break
            await anyio.sleep(0.2)
    route.ready_after_s = time.monotonic() - started
    log.info("%s: index idle after %.1f s (%s)", route.spec.name, route.ready_after_s, _index_state(route.client))


async def pick_queries(route: Route, per_file: int) -> list[Query]:
    """documentSymbol per file, then definition, references and hover at `per_file` function names each."""
    queries: list[Query] = []
    for relative in route.spec.corpus.files:
        query = Query(SYMBOLS, relative)
        queries.append(query)
        symbols = await route.client.request(SYMBOLS, query.params(route.spec.corpus), timeout=REQUEST_TIMEOUT)
        functions = sorted(
            (s["selectionRange"]["start"]["line"], s["selectionRange"]["start"]["character"])
            for s in symbols or []
            if isinstance(s, dict) and s.get("kind") == FUNCTION_KIND and "selectionRange" in s
        )
        if not functions:
            raise LatencyBenchError(f"{relative}: clangd reported no functions")
        for line, character in spread(functions, per_file):
            for method in METHODS[1:]:
                queries.append(Query(method, relative, line, character))
    return queries


async def send(route: Route, query: Query, params: dict[str, Any]) -> tuple[int, Any]:
    """One timed request: nanoseconds from before framing to after the answer is decoded."""
    start = time.perf_counter_ns()
    result = await route.client.request(query.method, params, timeout=REQUEST_TIMEOUT)
    return time.perf_counter_ns() - start, result


def _normalised(result: Any, corpus: Corpus) -> str:
    return json.dumps(result, sort_keys=True).replace(path_uri(corpus.root), "ROOT")


async def warm_up(routes: Sequence[Route], queries: Sequence[Query], rounds: int) -> None:
    """Unmeasured rounds: ASTs built, caches filled, code paths warm."""
    for _ in range(rounds):
        for route in routes:
            for query in queries:
                await send(route, query, query.params(route.spec.corpus))


async def run_rounds(routes: Sequence[Route], queries: Sequence[Query], rounds: int) -> dict[str, Any]:
    """Measure `rounds` interleaved rounds; returns the answer comparison of the first."""
    params = {r.spec.name: [q.params(r.spec.corpus) for q in queries] for r in routes}
    matches = {r.spec.name: {m: [0, 0] for m in METHODS} for r in routes[1:]}
    gc.collect()
    gc.disable()  # a collection pause would land on whichever route happened to be running
    try:
        for round_no in range(rounds):
            order = [routes[(round_no + k) % len(routes)] for k in range(len(routes))]
            for i, query in enumerate(queries):
                answers: dict[str, str] = {}
                for route in order:
                    elapsed, result = await send(route, query, params[route.spec.name][i])
                    route.samples[query.method].append(elapsed)
                    if round_no == 0:
                        answers[route.spec.name] = _normalised(result, route.spec.corpus)
                if round_no == 0:
                    base = answers[routes[0].spec.name]
                    for route in routes[1:]:
                        tally = matches[route.spec.name][query.method]
                        tally[0] += answers[route.spec.name] == base
                        tally[1] += 1
            for route in routes:
                # The client logs every message; a long run would otherwise hold them all.
                route.client.messages.clear()
                route.client.notifications.clear()
            gc.collect()
    finally:
        gc.enable()
    return matches


def summarise(routes: Sequence[Route], matches: dict[str, Any]) -> dict[str, Any]:
    """Per-route percentiles per method and pooled, and each route's cost over the first."""
    base = routes[0]
    out: dict[str, Any] = {"baseline": base.spec.name, "routes": {}, "added": {}}
    for route in routes:
        pooled = [s for m in METHODS for s in route.samples[m]]
        out["routes"][route.spec.name] = {
            "description": route.spec.description,
            "ready_after_s": round(route.ready_after_s, 1),
            "methods": {m: Summary.of_ns(route.samples[m]).as_dict() for m in METHODS},
            "all": Summary.of_ns(pooled).as_dict(),
        }
        if route is base:
            continue
        added: dict[str, Any] = {}
        for m in METHODS:
            added[m] = Added.between(
                Summary.of_ns(base.samples[m]),
                Summary.of_ns(route.samples[m]),
                paired_median_us(base.samples[m], route.samples[m]),
            ).as_dict()
        base_pooled = [s for m in METHODS for s in base.samples[m]]
        added["all"] = Added.between(
            Summary.of_ns(base_pooled), Summary.of_ns(pooled), paired_median_us(base_pooled, pooled)
        ).as_dict()
        out["added"][route.spec.name] = added
    out["answers_match"] = matches
    return out


async def run(
    specs: Sequence[RouteSpec],
    *,
    rounds: int,
    warmup: int,
    per_file: int,
    quiet_s: float,
    index_timeout_s: float,
    cpu_pids: Mapping[str, int],
) -> dict[str, Any]:
    """The whole latency benchmark over `specs`; the first is the baseline.

    `cpu_pids` names processes (the daemons) whose CPU time over the measured
    rounds goes into the result.
    """
    async with AsyncExitStack() as stack:
        routes: list[Route] = []
        for spec in specs:
            # One at a time: two clangd processes indexing at once would share two cores with everyone else.
            route = await stack.enter_async_context(connect(spec))
            await open_and_index(route, quiet_s=quiet_s, timeout_s=index_timeout_s)
            routes.append(route)
        queries = await pick_queries(routes[0], per_file)
        log.info("%d queries per round per route; %d warm-up and %d measured rounds", len(queries), warmup, rounds)
        started = time.monotonic()
        await warm_up(routes, queries, warmup)
        cpu_before = {name: process_cpu_seconds(pid) for name, pid in cpu_pids.items()}
        matches = await run_rounds(routes, queries, rounds)
        cpu = {name: process_cpu_seconds(pid) - cpu_before[name] for name, pid in cpu_pids.items()}
        result = summarise(routes, matches)
        result["elapsed_s"] = round(time.monotonic() - started, 1)
        result["cpu_s_measured"] = {name: round(seconds, 3) for name, seconds in cpu.items()}
        result["queries_per_round"] = len(queries)
        result["rounds"] = rounds
        result["warmup_rounds"] = warmup
        result["queries"] = [[q.method, q.file, q.line, q.character] for q in queries]
        result["files"] = list(specs[0].corpus.files)
        result["bench_pid"] = os.getpid()
        return result
