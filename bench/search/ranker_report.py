"""The docstring benchmark per project: today's main, the fusion alone, the learned ranker held out (issue 22).

For every project of the set (corpus.py: Python and C/C++), in one run, against the BM25
baseline measured in the same run (BM25 over perfect function chunks, bm25.py):

- `main`: stage 1 with the fusion main ships (keyword 0.5, C 2.5, strength 40);
- `fusion`: stage 1 with this checkout's SearchConfig() and the learned stage off;
- `ranker (held out)`: stage 1 with the learned stage on and the model trained on every
  other project (bench/out/search/train_ranker.json, written by train_ranker.py), so no
  project is scored by a model that saw it.

MRR@10 and hit@10 each, the ratio to BM25, and the goals of issue 22 (MRR@10 >= 0.6,
hit@10 >= 0.85, >= 1.3x BM25, never more than 0.02 below main).

    python -m bench.search.train_ranker             # first: the held-out models
    python -m bench.search.ranker_report            # every project
    python -m bench.search.ranker_report tornado --cost   # stage 1's ms per query, ranker off and on

Output: bench/out/search/ranker_report.json and a markdown table on stdout.
"""

from __future__ import annotations

import dataclasses
import json
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

from bench.runner import arg_parser
from bench.search.corpus import OUT_DIR, PROJECTS
from bench.search.quality import Bench, open_bench, stage1_ranks
from bench.search.ranking import score
from lensmux.graph.search import FusionWeights, SearchConfig
from lensmux.graph.search.ranker import RankerModel

__all__ = ["MAIN"]

# The fusion of main at 084ffb9, whatever this checkout's defaults are.
MAIN = SearchConfig(
    fusion=FusionWeights(keyword=0.5, keyword_c=2.5, coverage=1.0, strength=40.0, declaration=1.0), learned_ranker=False
)
_GOAL_MRR, _GOAL_HIT, _GOAL_RATIO, _GOAL_SLACK = 0.6, 0.85, 1.3, 0.02


def stage1_cost(bench: Bench, repeats: int = 2) -> dict[str, list[float]]:
    """Stage 1's ms per query with the ranker off and on, alternating, over memoised sources.

    A first pass fills the memo of both sources and the query vectors, so what is timed is
    the fusion, the ranker (features, a chunk read, the candidate graph) and the rerank.
    """
    off, on = dataclasses.replace(SearchConfig(), learned_ranker=False), SearchConfig()
    stage1_ranks(bench, off)
    out: dict[str, list[float]] = {"off": [], "on": []}
    for _ in range(repeats):
        for label, config in (("off", off), ("on", on)):
            started = time.perf_counter()
            stage1_ranks(bench, config)
            out[label].append(round((time.perf_counter() - started) * 1000 / max(1, len(bench.items)), 1))
    return out


def main(argv: list[str] | None = None) -> int:
    """Measure the named projects (default: all) with the three rankings."""
    parser = arg_parser(__doc__)
    parser.add_argument("projects", nargs="*", default=list(PROJECTS))
    parser.add_argument("--models", default="train_ranker", help="the train_ranker output (its --label)")
    parser.add_argument("--label", default="", help="suffix of the output file")
    parser.add_argument("--cost", action="store_true", help="only time stage 1 with the ranker off and on")
    args = parser.parse_args(argv)
    if args.cost:
        for name in args.projects:
            bench = open_bench(name, None, None)
            try:
                print(f"{name} ({len(bench.items)} queries), ms per query: {stage1_cost(bench)}", flush=True)
            finally:
                bench.close()
        return 0
    held_out = json.loads((OUT_DIR / f"{args.models}.json").read_text())["held_out"]
    fusion = dataclasses.replace(SearchConfig(), learned_ranker=False)
    results: dict[str, Any] = {}
    for name in args.projects:
        bench = open_bench(name, None, None)
        try:
            model = RankerModel.of(held_out[name]["weights"], [p for p in PROJECTS if p != name])
            ranker = dataclasses.replace(SearchConfig(), learned_ranker=True, ranker_model=model)
            results[name] = {
                "language": PROJECTS[name].language,
                "queries": len(bench.items),
                "bm25": score(bench.baseline),
                "main": score(stage1_ranks(bench, MAIN)),
                "fusion": score(stage1_ranks(bench, fusion)),
                "ranker": score(stage1_ranks(bench, ranker)),
            }
        finally:
            bench.close()
        r = results[name]
        print(
            f"{name}: " + ", ".join(f"{k} {r[k]['mrr@10']:.3f}" for k in ("bm25", "main", "fusion", "ranker")),
            flush=True,
        )
    suffix = f"-{args.label}" if args.label else ""
    (OUT_DIR / f"ranker_report{suffix}.json").write_text(json.dumps(results, indent=1))
    print(markdown(results))
    return 0


def _cell(r: dict[str, Any], key: str) -> str:
    bm25 = r["bm25"]["mrr@10"]
    ratio = r[key]["mrr@10"] / bm25 if bm25 else float("inf")
    return f"{r[key]['mrr@10']:.3f} / {r[key]['hit@10']:.2f} / {ratio:.2f}x"


def markdown(results: dict[str, Any]) -> str:
    """One row per project; cells MRR@10 / hit@10 / ratio to BM25; then the goals met per ranking."""
    lines = [
        "| project | lang | queries | BM25 | main | fusion alone | ranker (held out) | ranker - main |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for name, r in results.items():
        lines.append(
            f"| {name} | {r['language']} | {r['queries']} | {r['bm25']['mrr@10']:.3f} / {r['bm25']['hit@10']:.2f} "
            f"| {_cell(r, 'main')} | {_cell(r, 'fusion')} | {_cell(r, 'ranker')} "
            f"| {r['ranker']['mrr@10'] - r['main']['mrr@10']:+.3f} |"
        )
    means = {
        k: statistics.fmean(r[k]["mrr@10"] for r in results.values()) for k in ("bm25", "main", "fusion", "ranker")
    }
    lines.append("| mean | | | " + " | ".join(f"{means[k]:.3f}" for k in ("bm25", "main", "fusion", "ranker")) + " | |")
    lines += ["", "| goal | main | fusion alone | ranker (held out) |", "| --- | ---: | ---: | ---: |"]
    goals: dict[str, Callable[[dict[str, Any], str], bool]] = {
        f"MRR@10 >= {_GOAL_MRR}": lambda r, k: bool(r[k]["mrr@10"] >= _GOAL_MRR),
        f"hit@10 >= {_GOAL_HIT}": lambda r, k: bool(r[k]["hit@10"] >= _GOAL_HIT),
        f">= {_GOAL_RATIO}x BM25": lambda r, k: bool(r[k]["mrr@10"] >= _GOAL_RATIO * r["bm25"]["mrr@10"]),
        f"not below main by > {_GOAL_SLACK}": lambda r, k: bool(r[k]["mrr@10"] >= r["main"]["mrr@10"] - _GOAL_SLACK),
    }
    n = len(results)
    for goal, met in goals.items():
        cells = [f"{sum(1 for r in results.values() if met(r, k))} of {n}" for k in ("main", "fusion", "ranker")]
        lines.append(f"| {goal} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
