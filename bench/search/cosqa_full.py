"""CoSQA by the standard protocol: every query ranks the whole code base; MRR over the full ranking.

CoCLR's own evaluation (code_search/run_siamese_test.py, `retrieval`) scores each of the
500 test queries against all 6,267 functions of `code_idx_map.txt`, sorts them, and
averages 1 / (1-based position of the query's `retrieval_idx`) with no cut-off; that is
"MRR" below, beside MRR@10 (the same ranking, 0 past rank 10) and hit@10. The pool,
the queries and the metric are the script's; the rankers are lensmux's over the index
a daemon built of the 6,267 functions (cosqa.py: one file each):

- vector only: the query's cosine to every chunk, exactly (all vectors, no hnswlib
  approximation), a function scoring its best chunk;
- BM25 baseline: bench/search/bm25.py over the 6,267 functions (cosqa.py's baseline),
  its whole list, the functions it does not match tied last as below;
- keyword only: the search's own FTS5 expression, BM25 of every matching chunk, a
  function its best chunk; functions no chunk of which matches tie last, and count
  the mean of 1 / rank over the tied positions (what a random order would give);
- hybrid: stage 1 as the daemon ranks it (quality.py) asked for 20 answers, which it
  draws from the same 100-chunk lists as for 10 (SearchConfig.min_list_chunks); past
  those 20 the hybrid ranks nothing, so the rest follow in vector-only order. A query
  whose answer is not in the 20 gets at most 1/21 from that tail, so the MRR of any
  other completion differs by at most (share missed in the 20) / 21, printed as
  `tail bound`;
- with `--adapter`, vector only and hybrid again with the query adapter applied.

    python -m bench.search.cosqa_full DIR --index-label words [--adapter] [--max-queries N]

DIR holds `cosqa-retrieval-test-500.json` and `code_idx_map.txt` (cosqa.py says where they come from).
Output: bench/out/search/cosqa-full[-<label>].json and a markdown table.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from bench.runner import arg_parser
from bench.search.bm25 import Bm25, Document
from bench.search.corpus import OUT_DIR
from bench.search.cosqa import _rel, load, open_cosqa_bench
from bench.search.offline import NullGateway, OfflineIndex
from bench.search.quality import SHIPPED, Bench, _View
from bench.search.ranking import EvalItem
from lensmux.graph.search import Overrides, SearchRequest
from lensmux.graph.search.candidates.seeds import keyword_expression
from lensmux.graph.search.catalog import Catalog

__all__ = ["full_scores"]

HYBRID_ANSWERS = 20
_FILE = re.compile(r"f\d+/c(\d+)\.py$")

Embed = Callable[[str], npt.NDArray[np.float32]]


def _code_index(path: str) -> int | None:
    match = _FILE.search(path)
    return int(match.group(1)) if match else None


class _Pool:
    """Every chunk of the CoSQA index: its vector and the function (code index) it belongs to."""

    def __init__(self, offline: OfflineIndex, size: int) -> None:
        ids = sorted(offline.store.chunk_ids())
        owner = {cid: _code_index(node.path) for cid, node in Catalog(offline.store, offline.root).nodes_of_chunks(ids)}
        vectors = offline.vectors.vectors(ids)
        kept = [cid for cid in ids if owner.get(cid) is not None and cid in vectors]
        self.size = size
        self.chunk_code = {cid: int(owner[cid] or 0) for cid in kept}
        self.codes = np.array([self.chunk_code[cid] for cid in kept])
        self.matrix = np.stack([vectors[cid] for cid in kept]).astype(np.float32)

    def vector_scores(self, query: npt.NDArray[np.float32]) -> npt.NDArray[np.float64]:
        """Per function, its best chunk's cosine (-inf for a function with no chunk)."""
        cosines = (self.matrix @ query).astype(np.float64)
        out = np.full(self.size, -np.inf)
        np.maximum.at(out, self.codes, cosines)
        return out


def _reciprocal(scores: npt.NDArray[np.float64], answer: int) -> float:
    """1 / rank of `answer` when sorting by score, ties broken at random in expectation."""
    own = scores[answer]
    above = int((scores > own).sum())
    tied = int((scores == own).sum())
    return float(np.mean(1.0 / np.arange(above + 1, above + tied + 1)))


def _ordered_reciprocal(order: Sequence[int], answer: int) -> float:
    return 1.0 / (list(order).index(answer) + 1) if answer in order else 0.0


def full_scores(bench: Bench, pool: _Pool, answers: Sequence[int], embed: Embed, label: str) -> dict[str, Any]:
    """Standard-protocol MRR, MRR@10 and hit@10 of vector only, keyword only and hybrid with `embed`."""
    items = bench.items
    rows: dict[str, list[float]] = {f"vector only{label}": [], f"hybrid (stage 1){label}": []}
    if not label:
        rows["keyword only"] = []
    tail_missed = 0
    saved = bench.offline.embedder.embed_query
    bench.offline.embedder.embed_query = embed  # type: ignore[method-assign,assignment]
    try:
        hybrid_lists = _hybrid(bench, [item.query for item in items])
        for item, answer, answered in zip(items, answers, hybrid_lists, strict=True):
            vector = pool.vector_scores(embed(item.query))
            rows[f"vector only{label}"].append(_reciprocal(vector, answer))
            head = list(dict.fromkeys(c for c in answered if c is not None))[:HYBRID_ANSWERS]
            listed = set(head)
            rest = [int(c) for c in np.lexsort((np.arange(pool.size), -vector)) if int(c) not in listed]
            tail_missed += answer not in head
            rows[f"hybrid (stage 1){label}"].append(_ordered_reciprocal(head + rest, answer))
            if not label:
                rows["keyword only"].append(_reciprocal(_keyword_scores(bench, pool, item), answer))
    finally:
        bench.offline.embedder.embed_query = saved  # type: ignore[method-assign]
    out = {name: _summary(values) for name, values in rows.items()}
    out[f"hybrid (stage 1){label}"]["tail_bound"] = round(tail_missed / max(len(items), 1) / (HYBRID_ANSWERS + 1), 4)
    return out


def _summary(reciprocals: Sequence[float]) -> dict[str, Any]:
    values = np.array(reciprocals)
    at10 = np.where(values >= 1.0 / 10, values, 0.0)
    return {
        "n": len(values),
        "mrr": round(float(values.mean()), 4),
        "mrr@10": round(float(at10.mean()), 4),
        "hit@10": round(float((values >= 1.0 / 10).mean()), 4),
    }


def bm25_scores(codes: dict[int, str], queries: Sequence[str], answers: Sequence[int]) -> dict[str, Any]:
    """The BM25 baseline (bm25.py, over the 6,267 functions) by the same protocol: unmatched functions tie last."""
    bm25 = Bm25([Document(_rel(i), 0, code) for i, code in codes.items()])
    reciprocals = []
    for query, answer in zip(queries, answers, strict=True):
        scores = np.full(len(codes), -np.inf)
        ranked = bm25.search(query, len(codes))
        for position, (path, _) in enumerate(ranked):
            code = _code_index(path)
            if code is not None:
                scores[code] = len(ranked) - position
        reciprocals.append(_reciprocal(scores, answer))
    return _summary(reciprocals)


def _keyword_scores(bench: Bench, pool: _Pool, item: EvalItem) -> npt.NDArray[np.float64]:
    scores = np.full(pool.size, -np.inf)
    expression = keyword_expression(item.query)
    if expression is None:
        return scores
    for cid, bm25 in bench.offline.store.fts_search(expression, 10**7):
        code = pool.chunk_code.get(cid)
        if code is not None:
            scores[code] = max(scores[code], bm25)
    return scores


def _hybrid(bench: Bench, queries: Sequence[str]) -> list[list[int | None]]:
    import anyio

    from lensmux.graph.search import HybridSearchEngine

    view = _View(bench)
    engine = HybridSearchEngine(NullGateway(), embed_query=bench.offline.embedder.embed_query, config=SHIPPED)

    async def run() -> list[list[int | None]]:
        out: list[list[int | None]] = []
        for query in queries:
            request = SearchRequest(query=query, top_k=HYBRID_ANSWERS, config_overrides=Overrides(max_graph_depth=0))
            response = await engine.search(request, view)
            out.append([_code_index(s.file_path) for s in response.ranked_symbols])
        return out

    return anyio.run(run)


def main(argv: list[str] | None = None) -> int:
    """Rank the whole pool for every query, with and without the adapter."""
    parser = arg_parser(__doc__)
    parser.add_argument("data_dir", type=Path)
    parser.add_argument("--index-label", default="")
    parser.add_argument("--max-queries", type=int)
    parser.add_argument("--adapter", action="store_true", help="also with the shipped query adapter")
    args = parser.parse_args(argv)
    codes, _ = load(args.data_dir)
    bench = open_cosqa_bench(args.data_dir, args.index_label, args.max_queries)
    try:
        pool = _Pool(bench.offline, len(codes))
        answers = [int(item.answers[0].path.rsplit("c", 1)[1].removesuffix(".py")) for item in bench.items]
        raw = bench.offline.embedder.embed_query
        results: dict[str, Any] = {"BM25 baseline": bm25_scores(codes, [item.query for item in bench.items], answers)}
        results |= full_scores(bench, pool, answers, raw, "")
        if args.adapter:
            from lensmux.graph.embedding.query.query_adapter import load_for

            adapter = load_for(bench.offline.embedder.info().name, bench.offline.embedder.dim).adapter
            if adapter is None:
                raise SystemExit("no usable query adapter ships for this model")
            results |= full_scores(bench, pool, answers, lambda text: adapter.apply(raw(text)), " + adapter")
            results["adapter"] = adapter.name
    finally:
        bench.close()
    suffix = f"-{args.index_label}" if args.index_label else ""
    record = {"pool": len(codes), "chunks": len(pool.chunk_code), "queries": len(bench.items), "results": results}
    out = OUT_DIR / f"cosqa-full{suffix}.json"
    out.write_text(json.dumps(record, indent=1))
    print("| ranker | MRR (full ranking) | MRR@10 | hit@10 |\n| --- | ---: | ---: | ---: |")
    for name, r in results.items():
        if isinstance(r, dict):
            print(f"| {name} | {r['mrr']:.3f} | {r['mrr@10']:.3f} | {r['hit@10']:.2f} |")
    print(f"\n(saved {out})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
