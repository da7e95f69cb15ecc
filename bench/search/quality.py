"""Quality of every strategy on every benchmark project, against the BM25 baseline, offline.

For each project (corpus.py; indexed once by a real daemon, index_set.py):

- `bm25`: the baseline, BM25 over perfect function chunks (bm25.py);
- `keyword`, `vector`: lensmux's own single strategies over its index (offline.py);
- `hybrid`: stage 1 as the daemon ranks it at depth 0 (fused seeds, anchors, rerank
  with no server), with the shipped SearchConfig or a variant;
- stage ablations: the hybrid without anchors, without its vector side, without its
  keyword side.

MRR@10, hit@1, hit@10 per strategy, the hybrid's ratio to the baseline and to the best
of lensmux's own single strategies. The full pipeline with live expansion (and its
PageRank/Louvain stages) runs through the daemon in evaluate.py.

    python -m bench.search.quality                  # every project (≈ 5 min on 2 busy cores)
    python -m bench.search.quality click brotli --max-queries 40

Output: bench/out/search/quality.json and markdown tables on stdout.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy
import numpy.typing as npt

from bench.runner import arg_parser
from bench.search.bm25 import Bm25, function_documents
from bench.search.corpus import OUT_DIR, PROJECTS, load_or_prepare
from bench.search.evaluate import summary_queries
from bench.search.index_set import indexed
from bench.search.offline import OfflineIndex
from bench.search.ranking import EvalItem, group_queries, rank_of, sample, score
from lensmux.graph.embedding.query.query_adapter import QueryAdapter
from lensmux.graph.search import FusionWeights, SearchConfig
from lensmux.graph.search.candidates import seeds as seeds_module

__all__ = [
    "ABLATIONS",
    "Bench",
    "adapted_queries",
    "open_bench",
    "stage1_ranks",
    "use_query_adapter",
    "without_anchors",
]

# Results of one source are fetched this deep once and cut for every setting.
_MEMO_DEPTH = 300


class _MemoStore:
    """The index's Store with fts_search answered from memory after the first time."""

    def __init__(self, store: Any) -> None:
        self._store = store
        self._memo: dict[str, list[tuple[int, float]]] = {}

    def fts_search(self, match: str, k: int = 20) -> list[tuple[int, float]]:
        """Store.fts_search, memoised."""
        if match not in self._memo or k > _MEMO_DEPTH:
            self._memo[match] = self._store.fts_search(match, max(k, _MEMO_DEPTH))
        return self._memo[match][:k]

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)


class _MemoVectors:
    """The index's VectorIndex with search answered from memory after the first time."""

    def __init__(self, vectors: Any) -> None:
        self._vectors = vectors
        self._memo: dict[str, list[tuple[int, float]]] = {}

    def search(self, vector: npt.NDArray[numpy.float32], k: int, ef: int | None = None) -> list[tuple[int, float]]:
        """VectorIndex.search, memoised by the query vector."""
        key = hashlib.sha1(numpy.ascontiguousarray(vector).tobytes()).hexdigest()
        if key not in self._memo:
            self._memo[key] = self._vectors.search(vector, _MEMO_DEPTH, ef=max(_MEMO_DEPTH, ef or 0))
        return self._memo[key][:k]

    def __len__(self) -> int:
        return len(self._vectors)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._vectors, name)


@dataclass
class Bench:
    """One project's queries, its index opened offline with memoised sources, and its baseline."""

    name: str
    items: list[EvalItem]
    offline: OfflineIndex
    baseline: list[int | None]
    lines: int
    store: _MemoStore
    vectors: _MemoVectors

    def close(self) -> None:
        """Close the index."""
        self.offline.close()


def open_bench(
    name: str, embed: Callable[[str], npt.NDArray[numpy.float32]] | None, most: int | None, label: str = ""
) -> Bench:
    """Open a project's index (indexing it first if needed) and compute its BM25 baseline."""
    from lensmux.graph.embedding.embedder import Embedder

    prepared = load_or_prepare(name)
    store_dir, root = indexed(name, label)
    items = sample(group_queries(summary_queries(prepared)), most)
    offline = OfflineIndex(store_dir, root, Embedder.open_default())
    memo: dict[str, npt.NDArray[numpy.float32]] = {}
    raw_embed = embed or offline.embedder.embed_query

    def cached(text: str) -> npt.NDArray[numpy.float32]:
        if text not in memo:
            memo[text] = raw_embed(text)
        return memo[text]

    offline.embedder.embed_query = cached  # type: ignore[method-assign]
    bm25 = Bm25(function_documents(prepared.root))
    baseline = [rank_of(item, bm25.search(item.query)) for item in items]
    store, vectors = _MemoStore(offline.store), _MemoVectors(offline.vectors)
    return Bench(name, items, offline, baseline, prepared.py_lines + prepared.c_lines, store, vectors)


def adapted_queries(
    raw: Callable[[str], npt.NDArray[numpy.float32]], adapter: QueryAdapter
) -> Callable[[str], npt.NDArray[numpy.float32]]:
    """`raw`'s query vectors through `adapter`, memoised.

    Embedder.embed_query applies the adapter to the model's plain vector
    (adapter.apply(vector)); so does this, over open_bench's memo of the plain vectors,
    which keeps the two bit-identical (tests/graph/embedding/test_query_adapter.py).
    """
    memo: dict[str, npt.NDArray[numpy.float32]] = {}

    def adapted(text: str) -> npt.NDArray[numpy.float32]:
        if text not in memo:
            memo[text] = adapter.apply(raw(text))
        return memo[text]

    return adapted


def use_query_adapter(bench: Bench, adapter: QueryAdapter) -> None:
    """From now on `bench` embeds queries as a daemon with `query_adapter = true` does."""
    embedder = bench.offline.embedder
    embedder.embed_query = adapted_queries(embedder.embed_query, adapter)  # type: ignore[method-assign, assignment]


class _View:
    """What the engine reads as the index: the memoised store and vectors."""

    def __init__(self, bench: Bench) -> None:
        self.store = bench.store
        self.vectors = bench.vectors
        self.embedder = bench.offline.embedder


def stage1_ranks(bench: Bench, config: SearchConfig) -> list[int | None]:
    """The answer's rank (or None) per query in the hybrid's stage 1 with `config`."""
    view = _View(bench)
    # OfflineIndex.stage1 passes itself as the index; hand it the memoised view instead.
    ranked = OfflineIndex.stage1(view, [i.query for i in bench.items], config)  # type: ignore[arg-type]
    return [rank_of(item, r) for item, r in zip(bench.items, ranked, strict=True)]


@contextmanager
def without_anchors(active: bool = True) -> Iterator[None]:
    """Stage 1 with no anchors: the query names nothing."""
    namespace = vars(seeds_module)
    saved = namespace["extract_mentions"]
    if active:
        namespace["extract_mentions"] = lambda query: []
    try:
        yield
    finally:
        namespace["extract_mentions"] = saved


SHIPPED = SearchConfig()


def _only(config: SearchConfig, *, vector: bool, keyword: bool) -> SearchConfig:
    f = config.fusion
    fusion = dataclasses.replace(
        f,
        vector=f.vector if vector else 0.0,
        keyword=f.keyword if keyword else 0.0,
        keyword_c=f.keyword_c if keyword else 0.0,
    )
    return dataclasses.replace(config, fusion=fusion)


# name -> (config, anchors on)
ABLATIONS: dict[str, tuple[Callable[[SearchConfig], SearchConfig], bool]] = {
    "hybrid (stage 1)": (lambda c: c, True),
    "- anchors": (lambda c: c, False),
    "- keyword side": (lambda c: _only(c, vector=True, keyword=False), True),
    "- vector side": (lambda c: _only(c, vector=False, keyword=True), True),
    "- keyword coverage": (
        lambda c: dataclasses.replace(c, fusion=dataclasses.replace(c.fusion, coverage=0.0)),
        True,
    ),
    "- keyword strength": (
        lambda c: dataclasses.replace(c, fusion=dataclasses.replace(c.fusion, strength=0.0)),
        True,
    ),
    "- C keyword weight": (
        lambda c: dataclasses.replace(c, fusion=dataclasses.replace(c.fusion, keyword_c=c.fusion.keyword)),
        True,
    ),
    # The fusion before this benchmark set: RRF, vector 3 : keyword 1, lists 3x/5x top_k deep.
    "rrf 3:1 (before)": (
        lambda c: dataclasses.replace(
            c,
            fusion=FusionWeights(method="rrf", vector=3.0, keyword=1.0, keyword_c=1.0, coverage=0.0, strength=0.0),
            min_list_chunks=1,
        ),
        True,
    ),
}


def measure(bench: Bench, config: SearchConfig) -> dict[str, Any]:
    """Every strategy and ablation of one project."""
    out: dict[str, Any] = {
        "bm25 baseline": score(bench.baseline),
        "keyword only": score([rank_of(i, bench.offline.keyword(i.query)) for i in bench.items]),
        "vector only": score([rank_of(i, bench.offline.vector(i.query)) for i in bench.items]),
    }
    for name, (change, anchors) in ABLATIONS.items():
        with without_anchors(not anchors):
            out[name] = score(stage1_ranks(bench, change(config)))
    return out


def markdown(results: dict[str, dict[str, Any]]) -> str:
    """One row per project: each strategy's MRR@10 / hit@10 and the hybrid's ratios."""
    names = ["bm25 baseline", "keyword only", "vector only", *ABLATIONS]
    lines = [
        "| project | lines | queries | " + " | ".join(names) + " | hybrid / BM25 | hybrid >= best single |",
        "| --- | ---: | ---: |" + " ---: |" * len(names) + " ---: | :---: |",
    ]
    for project, r in results.items():
        q = r["quality"]
        hybrid = q["hybrid (stage 1)"]["mrr@10"]
        best = max(q["keyword only"]["mrr@10"], q["vector only"]["mrr@10"])
        ratio = hybrid / q["bm25 baseline"]["mrr@10"] if q["bm25 baseline"]["mrr@10"] else float("inf")
        cells = " | ".join(f"{q[n]['mrr@10']:.3f} / {q[n]['hit@10']:.2f}" for n in names)
        verdict = "yes" if hybrid >= best else "NO"
        lines.append(f"| {project} | {r['lines']:,} | {r['items']} | {cells} | {ratio:.2f}x | {verdict} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Measure the named projects (default: all)."""
    parser = arg_parser(__doc__)
    parser.add_argument("projects", nargs="*", default=list(PROJECTS))
    parser.add_argument("--max-queries", type=int, help="a quick look: this many queries, evenly spaced")
    parser.add_argument("--search-config", default="", help="JSON of SearchConfig/FusionWeights fields to change")
    parser.add_argument("--label", default="", help="suffix of the output file")
    parser.add_argument("--index-label", default="", help="use the index kept under this label (index_set --label)")
    args = parser.parse_args(argv)
    config = config_from_json(args.search_config) if args.search_config else SHIPPED
    results: dict[str, dict[str, Any]] = {}
    for name in args.projects:
        bench = open_bench(name, None, args.max_queries, args.index_label)
        try:
            results[name] = {"lines": bench.lines, "items": len(bench.items), "quality": measure(bench, config)}
        finally:
            bench.close()
        print(f"{name}: " + json.dumps({k: v["mrr@10"] for k, v in results[name]["quality"].items()}), flush=True)
    suffix = f"-{args.label}" if args.label else ""
    Path(OUT_DIR / f"quality{suffix}.json").write_text(
        json.dumps({"config": dataclasses.asdict(config) | {"generic_names": None}, "results": results}, indent=1)
    )
    print(markdown(results))
    return 0


def config_from_json(text: str) -> SearchConfig:
    """A SearchConfig from JSON: top-level fields, `fusion` a table of FusionWeights fields."""
    data = json.loads(text)
    fusion = dataclasses.replace(SHIPPED.fusion, **data.pop("fusion", {}))
    return dataclasses.replace(SHIPPED, fusion=fusion, **data)


def ranks_table(rows: Sequence[tuple[str, float]]) -> str:
    """A two-column markdown table."""
    return "\n".join(["| setting | MRR@10 |", "| --- | ---: |", *(f"| {a} | {b:.3f} |" for a, b in rows)])


if __name__ == "__main__":
    sys.exit(main())
