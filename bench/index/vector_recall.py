"""How many of a text question's nearest chunks the hnsw graph returns, by ef, on a real index.

Stage 1 asks the vector index for 100 neighbours of the embedded question. hnswlib searches
with a candidate list of max(ef, k); the figures the graph's ef was first chosen on (the
"Vector search: (c)" section) used chunk vectors as questions, which sit inside the data. A
question in words does not: its best chunk is at a cosine near 0.5 where chunks' nearest
neighbours are near 0.9. This measures the graph on such questions.

For an index a daemon wrote (its store directory and root, e.g. the 100k monorepo's), every
question (the monorepo benchmark's first and warm questions, or lines of --questions FILE) is
embedded once; the exact 100 nearest come from a matrix product over all live vectors; then,
for each ef, recall@100 (mean and worst question) and the single-question search time,
p50 and p95, with the exact scan's p50 measured in the same run as the baseline.

    .venv/bin/python -m bench.index.vector_recall --store-dir STATE/lensmux/roots/NAME --root ROOT

Output: bench/out/index/vector_recall.json and .md.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

import numpy

from bench import OUT_DIR as BENCH_OUT
from bench.index.monorepo import FIRST_QUERY, WARM_QUERIES
from bench.runner import add_common_options, arg_parser, finish, result_header, run_and_save
from bench.search.offline import OfflineIndex
from bench.stats import percentile
from lensmux.graph.embedding.embedder import Embedder
from lensmux.graph.index import IndexStoreError
from lensmux.graph.index.sqlite.vectors import HnswParams

DEPTH = 100
EFS = (64, 100, 200, 400, 800)


def _questions(path: Path | None) -> list[str]:
    if path is None:
        return [FIRST_QUERY, *WARM_QUERIES]
    return [line.strip() for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _ms(values: list[float]) -> tuple[float, float]:
    ordered = sorted(values)
    return round(percentile(ordered, 50) * 1000, 3), round(percentile(ordered, 95) * 1000, 3)


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Recall@100 and search time per ef, the exact scan as the baseline."""
    started = time.monotonic()
    result = result_header("bench.index.vector_recall")
    embedder = Embedder.open_default()
    index = OfflineIndex(args.store_dir, args.root, embedder)
    try:
        vectors = index.vectors
        labels = sorted(vectors.labels())
        by_label = vectors.vectors(labels)
        matrix = numpy.stack([by_label[label] for label in labels])
        questions = _questions(args.questions)
        embedded = [embedder.embed_query(q) for q in questions]
        embedded = [v / numpy.linalg.norm(v) for v in embedded]
        exact: list[set[int]] = []
        scan_s: list[float] = []
        for vector in embedded:
            t0 = time.perf_counter()
            scores = matrix @ vector
            nearest = numpy.argpartition(-scores, DEPTH)[:DEPTH]
            scan_s.append(time.perf_counter() - t0)
            exact.append({labels[i] for i in nearest.tolist()})
        result["vectors"] = len(labels)
        result["questions"] = len(questions)
        result["best_cosine_mean"] = round(float(numpy.mean([max(matrix @ v) for v in embedded])), 3)
        result["exact_scan_ms_p50"] = _ms(scan_s)[0]
        rows = []
        for ef in EFS:
            recalls, took = [], []
            for vector, truth in zip(embedded, exact, strict=True):
                t0 = time.perf_counter()
                found = vectors.search(vector, DEPTH, ef=ef)
                took.append(time.perf_counter() - t0)
                recalls.append(len({label for label, _ in found} & truth) / DEPTH)
            p50, p95 = _ms(took)
            rows.append(
                {
                    "ef": ef,
                    "recall_mean": round(sum(recalls) / len(recalls), 3),
                    "recall_min": min(recalls),
                    "p50_ms": p50,
                    "p95_ms": p95,
                    "p50_vs_scan": round(p50 / max(result["exact_scan_ms_p50"], 1e-6), 2),
                }
            )
        result["rows"] = rows
        result["lensmux_ef"] = HnswParams().ef_search
    finally:
        index.close()
    return finish(result, started)


def render(result: dict[str, Any]) -> str:
    """The table for docs/benchmarks.md."""
    lines = [
        f"{result['vectors']:,} vectors, {result['questions']} questions (best chunk at cosine"
        f" {result['best_cosine_mean']} on average); the exact scan's p50 {result['exact_scan_ms_p50']} ms.",
        "",
        "| ef | recall@100 mean | worst question | p50 ms | p95 ms | p50 / exact scan |",
        "| ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for row in result["rows"]:
        mark = " (lensmux)" if row["ef"] == result["lensmux_ef"] else ""
        lines.append(
            f"| {row['ef']}{mark} | {row['recall_mean']} | {row['recall_min']} | {row['p50_ms']}"
            f" | {row['p95_ms']} | {row['p50_vs_scan']} |"
        )
    machine = result["machine"]
    start, end = (", ".join(map(str, machine[k])) for k in ("load_avg_at_start", "load_avg_at_end"))
    return "\n".join(lines) + f"\n\n`{result['command']}`; load average at the start {start}, at the end {end}\n"


def main() -> int:
    """`python -m bench.index.vector_recall`."""
    parser = arg_parser(__doc__)
    parser.add_argument("--store-dir", type=Path, required=True, help="the root's folder under the daemon's roots/")
    parser.add_argument("--root", type=Path, required=True, help="the indexed root")
    parser.add_argument("--questions", type=Path, help="one question a line (default: the monorepo's)")
    add_common_options(parser, BENCH_OUT / "index")
    return run_and_save(parser.parse_args(), "vector_recall", run, render, (IndexStoreError, OSError))


if __name__ == "__main__":
    raise SystemExit(main())
