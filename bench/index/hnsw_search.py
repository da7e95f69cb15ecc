"""(c) hnswlib with the index's parameters on a repository's chunk embeddings: query latency and recall@10.

The graph is built exactly as lensmux's VectorIndex builds it (cosine space,
M and ef_construction from HnswParams, one thread) from the vectors of
raw_model.py. Queries are chunk vectors themselves, in two sets: `self`
(the chunk is in the graph, as when a search starts from a known chunk) and
`held_out` (chunks left out of a second graph, as a fresh query text would be).
Exact neighbours come from brute-force cosine in numpy (a matrix product over
unit vectors); recall@10 is the share of those ten the graph returns.
p50/p90 are single-query knn_query calls, one thread, timed one by one; the
brute-force single-query time is measured the same way as the baseline.
"""

from __future__ import annotations

import time
from typing import Any

import hnswlib
import numpy as np
import numpy.typing as npt

from bench.stats import percentile
from lensmux.graph.index.sqlite.vectors import HnswParams

Vectors = npt.NDArray[np.float32]
K = 10


def _build(data: Vectors, labels: npt.NDArray[np.int64], params: HnswParams) -> tuple[hnswlib.Index, float]:
    index = hnswlib.Index(space="cosine", dim=data.shape[1])
    index.init_index(max_elements=len(data), ef_construction=params.ef_construction, M=params.m)
    index.set_num_threads(params.num_threads)
    started = time.perf_counter()
    index.add_items(data, labels, num_threads=params.num_threads)
    return index, time.perf_counter() - started


def _exact(base: Vectors, queries: Vectors) -> npt.NDArray[np.int64]:
    sims = queries @ base.T
    top = np.argpartition(-sims, K, axis=1)[:, :K]
    return np.asarray(top, dtype=np.int64)


def _queries(index: hnswlib.Index, queries: Vectors, ef: int) -> tuple[npt.NDArray[np.int64], list[float]]:
    index.set_ef(ef)
    found = np.empty((len(queries), K), dtype=np.int64)
    times: list[float] = []
    for i, q in enumerate(queries):
        started = time.perf_counter_ns()
        labels, _ = index.knn_query(q.reshape(1, -1), k=K, num_threads=1)
        times.append((time.perf_counter_ns() - started) / 1000.0)
        found[i] = labels[0]
    return found, times


def _recall(found: npt.NDArray[np.int64], exact: npt.NDArray[np.int64]) -> float:
    hits = sum(len(set(f.tolist()) & set(e.tolist())) for f, e in zip(found, exact, strict=True))
    return hits / (K * len(found))


def _brute_force_us(base: Vectors, queries: Vectors) -> list[float]:
    times: list[float] = []
    for q in queries:
        started = time.perf_counter_ns()
        sims = base @ q
        np.argpartition(-sims, K)[:K]
        times.append((time.perf_counter_ns() - started) / 1000.0)
    return times


def run(
    vectors: Vectors, *, queries: int = 1000, efs: tuple[int, ...] = (10, 32, 64, 128), seed: int = 7
) -> dict[str, Any]:
    """Build, query and compare with brute force; ef HnswParams().ef_search is lensmux's setting."""
    params = HnswParams()
    data = np.ascontiguousarray(vectors, dtype=np.float32)
    data /= np.maximum(np.linalg.norm(data, axis=1, keepdims=True), 1e-12)
    rng = np.random.default_rng(seed)
    n = len(data)
    order = rng.permutation(n)
    # Held-out queries are at most a quarter of the chunks, so their graph stays close in size.
    held = order[: min(queries, n // 4)]
    kept = np.setdiff1d(np.arange(n), held)
    sets = (("self", np.arange(n), order[: min(queries, n)]), ("held_out", kept, held))
    results: dict[str, Any] = {
        "vectors": n,
        "dim": int(data.shape[1]),
        "m": params.m,
        "ef_construction": params.ef_construction,
        "lensmux_ef_search": params.ef_search,
        "hnswlib_default_ef": 10,
        "threads": params.num_threads,
    }
    for name, base_ids, picked in sets:
        base = data[base_ids]
        index, build_s = _build(base, np.arange(len(base), dtype=np.int64), params)
        query_vectors = data[picked]
        exact = _exact(base, query_vectors)
        per_ef = []
        for ef in sorted({*efs, params.ef_search}):
            _queries(index, query_vectors[:50], ef)  # warm caches; not measured
            found, times = _queries(index, query_vectors, ef)
            per_ef.append(
                {
                    "ef": ef,
                    "recall_at_10": round(_recall(found, exact), 4),
                    "p50_us": round(percentile(sorted(times), 50), 1),
                    "p90_us": round(percentile(sorted(times), 90), 1),
                }
            )
        brute = _brute_force_us(base, query_vectors)
        results[name] = {
            "graph_size": len(base),
            "queries": len(picked),
            "build_s": round(build_s, 3),
            "build_us_per_vector": round(build_s * 1e6 / len(base), 1),
            "brute_force_p50_us": round(percentile(sorted(brute), 50), 1),
            "by_ef": per_ef,
        }
    return results
