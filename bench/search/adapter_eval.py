"""The query adapter on the search benchmarks: every project and CoSQA, with and without it.

Offline, over the indexes a daemon built (index_set.py; the chunk vectors are the same
either way, only query vectors change): the BM25 baseline and keyword only for
reference, then vector only and the hybrid's stage 1 (quality.py, shipped SearchConfig)
without and with the adapter. MRR@10 / hit@10 per project, and the difference.

    python -m bench.search.adapter_eval --index-label words                      # the shipped adapter
    python -m bench.search.adapter_eval --index-label words --adapter-file F.adapter --cosqa DIR click flask

Output: bench/out/search/adapter-eval[-<label>].json and a markdown table.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from bench.runner import arg_parser
from bench.search.corpus import OUT_DIR, PROJECTS
from bench.search.quality import SHIPPED, Bench, adapted_queries, open_bench, stage1_ranks
from bench.search.ranking import rank_of, score
from lensmux.graph.embedding.query.query_adapter import QueryAdapter, load_for

__all__ = ["with_and_without"]


def with_and_without(bench: Bench, adapter: QueryAdapter) -> dict[str, Any]:
    """Baseline, keyword only, and vector only / hybrid without and with `adapter`."""
    offline = bench.offline
    raw = offline.embedder.embed_query  # open_bench's memo of the plain query vectors
    adapted = adapted_queries(raw, adapter)
    out: dict[str, Any] = {
        "bm25 baseline": score(bench.baseline),
        "keyword only": score([rank_of(i, offline.keyword(i.query)) for i in bench.items]),
    }
    for suffix, embed in (("", raw), (" + adapter", adapted)):
        offline.embedder.embed_query = embed  # type: ignore[method-assign, assignment]
        try:
            out[f"vector only{suffix}"] = score([rank_of(i, offline.vector(i.query)) for i in bench.items])
            out[f"hybrid{suffix}"] = score(stage1_ranks(bench, SHIPPED))
        finally:
            offline.embedder.embed_query = raw  # type: ignore[method-assign]
    return out


COLUMNS = ("bm25 baseline", "keyword only", "vector only", "vector only + adapter", "hybrid", "hybrid + adapter")


def markdown(results: dict[str, dict[str, Any]]) -> str:
    """One row per project: MRR@10 / hit@10 of each column, the hybrid's ratio to BM25, the adapter's change."""
    lines = [
        "| project | queries | "
        + " | ".join(COLUMNS)
        + " | hybrid / BM25 | hybrid + adapter / BM25 | Δ vector | Δ hybrid |",
        "| --- | ---: |" + " ---: |" * (len(COLUMNS) + 4),
    ]
    for project, r in results.items():
        cells = " | ".join(f"{r[c]['mrr@10']:.3f} / {r[c]['hit@10']:.2f}" for c in COLUMNS)
        base = max(r["bm25 baseline"]["mrr@10"], 1e-9)
        ratios = f"{r['hybrid']['mrr@10'] / base:.2f}x | {r['hybrid + adapter']['mrr@10'] / base:.2f}x"
        d_vector = r["vector only + adapter"]["mrr@10"] - r["vector only"]["mrr@10"]
        d_hybrid = r["hybrid + adapter"]["mrr@10"] - r["hybrid"]["mrr@10"]
        lines.append(f"| {project} | {r['hybrid']['n']} | {cells} | {ratios} | {d_vector:+.3f} | {d_hybrid:+.3f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Measure the named projects (default: all nine) and CoSQA if given."""
    parser = arg_parser(__doc__)
    parser.add_argument("projects", nargs="*", default=list(PROJECTS))
    parser.add_argument("--index-label", default="")
    parser.add_argument("--adapter-file", type=Path, help="an adapter file to try (default: the shipped one)")
    parser.add_argument("--cosqa", type=Path, help="also CoSQA (cosqa.py's protocol), from this directory")
    parser.add_argument("--max-queries", type=int)
    parser.add_argument("--label", default="")
    args = parser.parse_args(argv)
    if args.adapter_file:
        adapter = QueryAdapter.read(args.adapter_file)
    else:
        shipped = load_for("all-MiniLM-L6-v2", 384).adapter
        if shipped is None:
            raise SystemExit("no usable query adapter ships; give --adapter-file")
        adapter = shipped
    results: dict[str, dict[str, Any]] = {}
    benches: list[tuple[str, Any]] = [
        (name, lambda n=name: open_bench(n, None, args.max_queries, args.index_label)) for name in args.projects
    ]
    if args.cosqa:
        from bench.search.cosqa import open_cosqa_bench

        benches.append(("CoSQA", lambda: open_cosqa_bench(args.cosqa, args.index_label, args.max_queries)))
    for name, opener in benches:
        bench = opener()
        try:
            results[name] = with_and_without(bench, adapter)
        finally:
            bench.close()
        print(f"{name}: " + json.dumps({k: v["mrr@10"] for k, v in results[name].items()}), flush=True)
    suffix = f"-{args.label}" if args.label else ""
    out = OUT_DIR / f"adapter-eval{suffix}.json"
    out.write_text(json.dumps({"adapter": adapter.name, "results": results}, indent=1))
    print(markdown(results))
    print(f"\n(adapter {adapter.name}; saved {out})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
