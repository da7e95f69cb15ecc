"""The cache figure: one references request answered from lensmux's cache versus the same request uncached.

Two daemons serve their own copies of the corpus: one with the response cache
(after one warm-up request every repetition is a hit, which the daemon's own
hit counters confirm) and one with `[daemon.cache] enabled = false` (every
repetition goes to clangd). Repetitions alternate between the two, so machine
noise lands on both alike.
"""

from __future__ import annotations

import gc
import json
import logging
import time
from typing import TYPE_CHECKING, Any

import anyio

from bench.mux.clangd_queries import REFERENCES, REQUEST_TIMEOUT, Query
from bench.mux.load_lanes import cache_delta
from bench.mux.load_sites import Site
from bench.stats import Summary

if TYPE_CHECKING:
    from bench.mux.load_clangd import Judge

log = logging.getLogger(__name__)

QUERIES = 5


async def _timed(site: Site, query: Query) -> tuple[int, Any]:
    start = time.perf_counter_ns()
    result = await site.warm.request(query.method, query.params(site.corpus), timeout=REQUEST_TIMEOUT)
    return time.perf_counter_ns() - start, result


def pick(queries: list[Query]) -> list[Query]:
    """Up to QUERIES references questions spread over the files."""
    refs = [q for q in queries if q.method == REFERENCES]
    step = max(len(refs) // QUERIES, 1)
    return refs[::step][:QUERIES]


async def run(cached: Site, uncached: Site, queries: list[Query], judge: Judge, reps: int) -> dict[str, Any]:
    """p50 and p99 of the same references requests from the cache and without one, and their ratio."""
    chosen = pick(queries)
    samples: dict[str, list[int]] = {"cached": [], "uncached": []}
    per_query: dict[str, dict[str, list[int]]] = {str(q): {"cached": [], "uncached": []} for q in chosen}
    wrong = 0
    sizes: dict[str, int] = {}
    for site in (cached, uncached):
        for query in chosen:
            # Fills the cache on one side, warms clangd on both.
            _, result = await _timed(site, query)
            sizes[str(query)] = len(json.dumps(result, separators=(",", ":")))
    before = await anyio.to_thread.run_sync(cached.cache_methods)
    gc.collect()
    gc.disable()  # a collection pause would land on whichever side happened to be running
    try:
        for rep in range(reps):
            for query in chosen:
                order = ((cached, "cached"), (uncached, "uncached"))
                for site, label in order if rep % 2 == 0 else reversed(order):
                    elapsed, result = await _timed(site, query)
                    samples[label].append(elapsed)
                    per_query[str(query)][label].append(elapsed)
                    wrong += judge.check_for(query, site.corpus)(result) != "ok"
    finally:
        gc.enable()
    hits = cache_delta(before, await anyio.to_thread.run_sync(cached.cache_methods))
    cached_summary = Summary.of_ns(samples["cached"])
    uncached_summary = Summary.of_ns(samples["uncached"])
    out = {
        "queries": [list(q) for q in chosen],
        "reps": reps,
        "cached": cached_summary.as_dict(),
        "uncached": uncached_summary.as_dict(),
        "p50_ratio_uncached_over_cached": round(uncached_summary.p50_us / cached_summary.p50_us, 1),
        "p99_ratio_uncached_over_cached": round(uncached_summary.p99_us / cached_summary.p99_us, 1),
        "per_query_p50_us": {
            q: {label: round(Summary.of_ns(v).p50_us, 1) for label, v in by_label.items()}
            for q, by_label in per_query.items()
        },
        "answer_bytes": sizes,
        "cache_counters": hits,
        "all_cached_were_hits": hits["methods"].get(REFERENCES, {}).get("hits") == reps * len(chosen),
        "answers_not_matching_reference": wrong,
    }
    log.info(
        "cache figure: references p50 %.0f µs cached, %.0f µs uncached (x%.1f)",
        cached_summary.p50_us,
        uncached_summary.p50_us,
        out["p50_ratio_uncached_over_cached"],
    )
    return out
