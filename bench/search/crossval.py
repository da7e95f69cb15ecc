"""Leave-one-project-out cross-validation of the fusion parameters over the whole benchmark set.

Every setting of GRID runs stage 1 (offline, quality.py) on every project once; then
for each project in turn, the setting with the best mean MRR@10 over the OTHER
projects is chosen and scored on the held-out one. The held-out scores are what
a project never seen would get from this way of choosing; the setting chosen most
often (and with the best mean over all) is what ships, and the table says whether
it is the same on every fold. Nothing is tuned on a single project.

    python -m bench.search.crossval                      # ≈ 10 min on 2 busy cores
    python -m bench.search.crossval --max-queries 60     # a quick look

Output: bench/out/search/crossval.json and markdown on stdout.
"""

from __future__ import annotations

import dataclasses
import json
import statistics
import sys
from pathlib import Path
from typing import Any

from bench.runner import arg_parser
from bench.search.corpus import OUT_DIR, PROJECTS
from bench.search.cosqa import open_cosqa_bench
from bench.search.quality import SHIPPED, open_bench, stage1_ranks
from bench.search.ranking import rank_of, score
from lensmux.graph.search import SearchConfig

__all__ = ["GRID", "STRENGTH_GRID", "crossvalidate"]


def _setting(method: str, vector: float, keyword: float, rrf_k: int = 60) -> tuple[str, SearchConfig]:
    # The first grid ran before the C weight, coverage and strength existed: one keyword weight, neither scaling.
    fusion = dataclasses.replace(
        SHIPPED.fusion, method=method, vector=vector, keyword=keyword, keyword_c=keyword, coverage=0.0, strength=0.0
    )
    label = f"{method} v{vector:g}:k{keyword:g}" + (f" k={rrf_k}" if method == "rrf" else "")
    return label, dataclasses.replace(SHIPPED, fusion=fusion, rrf_k=rrf_k)


GRID: dict[str, SearchConfig] = dict(
    [
        *(_setting("rrf", v, 1.0, k) for k in (10, 60) for v in (1.0, 2.0, 3.0, 5.0)),
        *(_setting("convex", 1.0, k) for k in (0.1, 0.2, 0.3, 0.5, 0.7, 1.0, 1.5)),
    ]
)
# The keyword weight of C/C++ chunks, on top of the chosen setting; chosen the same way
# (leave one project out) over the projects with C code.
C_GRID: dict[str, SearchConfig] = {
    f"convex v1:k0.3 c{c:g}": dataclasses.replace(
        SHIPPED,
        fusion=dataclasses.replace(
            SHIPPED.fusion, method="convex", vector=1.0, keyword=0.3, keyword_c=c, coverage=0.0, strength=0.0
        ),
    )
    for c in (0.3, 0.5, 1.0, 1.5, 2.0, 3.0)
}
# The keyword side scaled by the share of the query's words its best hits contain, to a
# power, on top of the shipped setting (a higher keyword weight may pay once it is scaled).
COVERAGE_GRID: dict[str, SearchConfig] = {
    f"convex v1:k{k:g} cov{g:g}": dataclasses.replace(
        SHIPPED,
        fusion=dataclasses.replace(
            SHIPPED.fusion, method="convex", vector=1.0, keyword=k, keyword_c=k * 5, coverage=g, strength=0.0
        ),
    )
    for k in (0.3, 0.5)
    for g in (0.0, 1.0, 2.0, 4.0)
}

# The keyword side scaled by the strength of its best hit, min(1, best BM25 / strength), on
# top of the shipped coverage; crossed with the two keyword weights of the coverage grid.
STRENGTH_GRID: dict[str, SearchConfig] = {
    f"convex v1:k{k:g} cov1 str{s:g}": dataclasses.replace(
        SHIPPED,
        fusion=dataclasses.replace(
            SHIPPED.fusion, method="convex", vector=1.0, keyword=k, keyword_c=k * 5, coverage=1.0, strength=s
        ),
    )
    for k in (0.3, 0.5)
    for s in (0.0, 10.0, 15.0, 20.0, 25.0, 30.0, 40.0)
}

# Issue 22: the C/C++ keyword weight again, on top of everything shipped since (keyword 0.5,
# coverage 1, strength 40), over the C/C++ projects; beside it the stage 1 of the main before
# the second pass (keyword 0.3, C 1.5, no strength) and no C weight of its own (C = keyword).
C2_GRID: dict[str, SearchConfig] = {
    **{
        f"k0.5 str40 c{c:g}": dataclasses.replace(SHIPPED, fusion=dataclasses.replace(SHIPPED.fusion, keyword_c=c))
        for c in (0.5, 1.0, 1.5, 2.0, 2.5, 3.0)
    },
    "previous: k0.3 c1.5 str0": dataclasses.replace(
        SHIPPED, fusion=dataclasses.replace(SHIPPED.fusion, keyword=0.3, keyword_c=1.5, strength=0.0)
    ),
    "k0.3 str40 c1.5": dataclasses.replace(
        SHIPPED, fusion=dataclasses.replace(SHIPPED.fusion, keyword=0.3, keyword_c=1.5)
    ),
    "k0.5 str0 c2.5": dataclasses.replace(SHIPPED, fusion=dataclasses.replace(SHIPPED.fusion, strength=0.0)),
}


def crossvalidate(table: dict[str, dict[str, float]], floor: dict[str, float] | None = None) -> dict[str, Any]:
    """table[setting][project] = MRR@10 -> per held-out project: the chosen setting and its score.

    With `floor` (project -> the MRR@10 of its best single strategy) only settings at or
    above the floor on every project of the fold count, the goal being a hybrid never below
    its own best single strategy; if none is, every setting counts.
    """
    projects = sorted(next(iter(table.values())))

    def choose(among: list[str]) -> str:
        eligible = [s for s in table if floor is None or all(table[s][p] >= floor[p] for p in among)] or list(table)
        return max(eligible, key=lambda s: (statistics.fmean(table[s][p] for p in among), s))

    folds: dict[str, Any] = {}
    for held in projects:
        chosen = choose([p for p in projects if p != held])
        folds[held] = {"chosen": chosen, "held_out_mrr@10": table[chosen][held]}
        if floor is not None:
            folds[held]["at_or_above_best_single"] = table[chosen][held] >= floor[held]
    return {
        "folds": folds,
        "mean_held_out": round(statistics.fmean(f["held_out_mrr@10"] for f in folds.values()), 4),
        "best_over_all": choose(projects),
    }


def _singles(bench: Any) -> dict[str, float]:
    """MRR@10 of the project's single strategies (keyword only, vector only), as quality.py measures them."""
    return {
        "keyword only": score([rank_of(i, bench.offline.keyword(i.query)) for i in bench.items])["mrr@10"],
        "vector only": score([rank_of(i, bench.offline.vector(i.query)) for i in bench.items])["mrr@10"],
    }


def main(argv: list[str] | None = None) -> int:
    """Run the grid on every project and cross-validate."""
    parser = arg_parser(__doc__)
    parser.add_argument("projects", nargs="*", default=list(PROJECTS))
    parser.add_argument("--max-queries", type=int, help="a quick look: this many queries per project")
    parser.add_argument("--index-label", default="", help="use the indexes kept under this label")
    parser.add_argument("--reuse", action="store_true", help="reuse the saved column of a project already measured")
    parser.add_argument("--c-grid", action="store_true", help="cross-validate the C/C++ keyword weight instead")
    parser.add_argument(
        "--c2-grid", action="store_true", help="the C/C++ keyword weight on top of today's fusion (issue 22)"
    )
    parser.add_argument("--coverage-grid", action="store_true", help="cross-validate the keyword coverage instead")
    parser.add_argument("--strength-grid", action="store_true", help="cross-validate the keyword strength instead")
    parser.add_argument(
        "--cosqa",
        type=Path,
        metavar="DIR",
        help="also score every setting on CoSQA (the two files in DIR); it is reported, and it is a fold "
        "only with --cosqa-fold",
    )
    parser.add_argument("--cosqa-fold", action="store_true", help="count CoSQA as one more project of the folds")
    parser.add_argument(
        "--floor",
        action="store_true",
        help="choose only among settings at or above each training project's best single strategy",
    )
    args = parser.parse_args(argv)
    grids = {"c": C_GRID, "c2": C2_GRID, "coverage": COVERAGE_GRID, "strength": STRENGTH_GRID}
    grid_name = (
        "c"
        if args.c_grid
        else "c2"
        if args.c2_grid
        else "coverage"
        if args.coverage_grid
        else "strength"
        if args.strength_grid
        else "main"
    )
    grid = grids.get(grid_name, GRID)
    table: dict[str, dict[str, float]] = {label: {} for label in grid}
    hits: dict[str, dict[str, float]] = {label: {} for label in grid}
    names = [*args.projects, *(["cosqa"] if args.cosqa else [])]
    for name in names:
        # Each project's column is kept, so a run can reuse the columns of projects already done.
        saved = (
            OUT_DIR / "crossval-columns" / f"{grid_name}-{args.index_label or 'default'}-{name}-{args.max_queries}.json"
        )
        singles_file = saved.with_name(f"singles-{args.index_label or 'default'}-{name}-{args.max_queries}.json")
        if args.reuse and saved.is_file() and (singles_file.is_file() or not args.floor):
            column = json.loads(saved.read_text())
        else:
            bench = (
                open_cosqa_bench(args.cosqa, args.index_label, args.max_queries)
                if name == "cosqa" and args.cosqa
                else open_bench(name, None, args.max_queries, args.index_label)
            )
            try:
                if not (args.reuse and saved.is_file()):
                    column = {label: score(stage1_ranks(bench, config)) for label, config in grid.items()}
                else:
                    column = json.loads(saved.read_text())
                singles_file.parent.mkdir(exist_ok=True)
                singles_file.write_text(json.dumps(_singles(bench)))
            finally:
                bench.close()
            saved.parent.mkdir(exist_ok=True)
            saved.write_text(json.dumps(column))
        for label in grid:
            table[label][name] = column[label]["mrr@10"]
            hits[label][name] = column[label]["hit@10"]
        best = max(grid, key=lambda s: table[s][name])
        print(f"{name}: best alone {best} {table[best][name]:.3f}", flush=True)
    folds = names if args.cosqa_fold else list(args.projects)
    floor: dict[str, float] | None = None
    if args.floor:
        floor = {}
        for name in folds:
            singles_file = (
                OUT_DIR / "crossval-columns" / f"singles-{args.index_label or 'default'}-{name}-{args.max_queries}.json"
            )
            floor[name] = max(json.loads(singles_file.read_text()).values())
    result = crossvalidate({label: {p: row[p] for p in folds} for label, row in table.items()}, floor) | {
        "floor": floor,
        "table": table,
        "hit@10": hits,
    }
    suffix = f"-{args.index_label}" if args.index_label else ""
    variant = ("-cosqa-fold" if args.cosqa_fold else "") + ("-floor" if args.floor else "")
    (OUT_DIR / f"crossval{'-' + grid_name if grid_name != 'main' else ''}{suffix}{variant}.json").write_text(
        json.dumps(result, indent=1)
    )
    projects = list(args.projects)
    extra = [n for n in names if n not in projects]
    print("| setting | " + " | ".join(projects) + " | mean | " + "".join(f"{n} | " for n in extra))
    print("| --- |" + " ---: |" * (len(projects) + 1 + len(extra)))
    for label in grid:
        row = [table[label][p] for p in projects]
        cells = " | ".join(f"{v:.3f}" for v in row) + f" | {statistics.fmean(row):.3f} |"
        print(f"| {label} | {cells}" + "".join(f" {table[label][n]:.3f} |" for n in extra))
    print()
    print("| held-out project | setting chosen on the others | held-out MRR@10 |")
    print("| --- | --- | ---: |")
    for held, fold in result["folds"].items():
        print(f"| {held} | {fold['chosen']} | {fold['held_out_mrr@10']:.3f} |")
    print(f"\nmean held-out MRR@10 {result['mean_held_out']:.3f}; best over all: {result['best_over_all']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
