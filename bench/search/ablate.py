"""Stage-1 ablations over the indexes the evaluation built: what each relevance choice is worth.

Not tuning: every variant runs on every project with nothing chosen from the result.
Each is the fused seeds (depth 0, no server; offline.py) with one thing
changed from the shipped defaults:

- `tests 1.0` / `prose 1.0`: test code / unstructured text keep their full share;
- `no anchors`: the query names nothing (anchors.extract_mentions answers []), which
  shows what the rule "anchors rank before everything" costs on docstring queries;
- `untuned fusion`: every fusion weight 1, lists of 1x and 2x top_k (the pre-tuning values).

    python -m bench.search.ablate flask requests rich tornado   # after bench.search.evaluate

Output: bench/out/search/ablate.json and a markdown table on stdout.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from bench.runner import arg_parser
from bench.search.corpus import OUT_DIR, load_or_prepare
from bench.search.evaluate import summary_queries
from bench.search.offline import OfflineIndex
from bench.search.ranking import group_queries, rank_of, score
from lensmux.graph.search import FusionWeights, SearchConfig
from lensmux.graph.search.candidates import seeds as seeds_module

SHIPPED = SearchConfig()
VARIANTS: dict[str, SearchConfig] = {
    "shipped defaults": SHIPPED,
    "tests 1.0": dataclasses.replace(SHIPPED, fusion=dataclasses.replace(SHIPPED.fusion, tests=1.0)),
    "prose 1.0": dataclasses.replace(SHIPPED, fusion=dataclasses.replace(SHIPPED.fusion, prose=1.0)),
    "no anchors": SHIPPED,
    "untuned fusion": dataclasses.replace(
        SHIPPED,
        fusion=FusionWeights(
            method="rrf",
            vector=1.0,
            keyword=1.0,
            keyword_c=1.0,
            coverage=0.0,
            strength=0.0,
            prose=1.0,
            tests=1.0,
            mention=1.0,
        ),
        keyword_depth=1.0,
        vector_depth=2.0,
    ),
}


@contextmanager
def _without_anchors(active: bool) -> Iterator[None]:
    namespace = vars(seeds_module)  # stage 1 looks the function up in its module on every query
    saved: Callable[..., Any] = namespace["extract_mentions"]
    if active:
        namespace["extract_mentions"] = lambda query: []
    try:
        yield
    finally:
        namespace["extract_mentions"] = saved


def ablate(name: str) -> dict[str, Any]:
    """Every variant on one project (its eval JSON names the index)."""
    from lensmux.graph.embedding.embedder import Embedder

    saved = json.loads((OUT_DIR / f"eval-{name}.json").read_text())
    items = group_queries(summary_queries(load_or_prepare(name)))
    texts = [item.query for item in items]
    store_dir, root = Path(saved["index"]["status"]["store_dir"]), Path(saved["project"]["root"])
    offline = OfflineIndex(store_dir, root, Embedder.open_default())
    out: dict[str, Any] = {}
    try:
        for variant, config in VARIANTS.items():
            with _without_anchors(variant == "no anchors"):
                ranked = offline.stage1(texts, config)
            out[variant] = score([rank_of(item, r) for item, r in zip(items, ranked, strict=True)])
    finally:
        offline.close()
    return out


def main(argv: list[str] | None = None) -> int:
    """Ablate the named projects."""
    parser = arg_parser(__doc__)
    parser.add_argument("projects", nargs="+")
    args = parser.parse_args(argv)
    results = {name: ablate(name) for name in args.projects}
    (OUT_DIR / "ablate.json").write_text(json.dumps(results, indent=1))
    print("| stage 1 variant | " + " | ".join(f"{p} MRR@10" for p in args.projects) + " |")
    print("| --- |" + " ---: |" * len(args.projects))
    for variant in VARIANTS:
        print(f"| {variant} | " + " | ".join(f"{results[p][variant]['mrr@10']:.3f}" for p in args.projects) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
