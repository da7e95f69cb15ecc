"""The C/C++ keyword weight: what it does to C and C++ projects, from the ranker's saved rows (issue 22).

The rows train_ranker.py saves hold, per query and candidate, everything the convex
fusion adds up (cosine, BM25 over the query's best, the coverage and strength of the
keyword list, the test and prose shares, C/C++ or not, header or not), so the fused
score of any (keyword, keyword_c, strength, declaration share) setting is recomputed
here without searching again. Ranks are the fused order alone (no anchors, no rerank);
`--check` compares them with the search's own stage 1 for the shipped setting.

For each C/C++ project: MRR@10 and hit@10 of the previous main's fusion (keyword 0.3,
C 1.5, no strength), of each of today's changes alone and of today's fusion; where the
first place goes (a header's declaration, a candidate only the keyword side found); and
the C keyword weight and declaration share chosen leaving each C/C++ project out.

    python -m bench.search.c_fusion            # after bench.search.train_ranker saved the rows

Output: bench/out/search/c_fusion.json and markdown on stdout.
"""

from __future__ import annotations

import itertools
import json
import statistics
import sys
from dataclasses import dataclass
from typing import Any

import numpy
import numpy.typing as npt

from bench.runner import arg_parser
from bench.search.corpus import OUT_DIR, PROJECTS
from bench.search.train_ranker import ROWS_DIR, Rows
from lensmux.graph.search.ranker import FEATURES

__all__ = ["Setting", "fused", "ranks"]

_COL = {name: i for i, name in enumerate(FEATURES)}
_CUTOFF = 10
_SHARE = 0.5  # FusionWeights.tests and .prose
_STRENGTH_OF_ROWS = 40.0  # keyword_abs = min(1, BM25 / 40)


@dataclass(frozen=True)
class Setting:
    """The fusion's knobs this study varies (the rest as shipped: vector 1, coverage 1)."""

    keyword: float
    keyword_c: float
    strength: float  # 0 off; at most 40 (what the rows can tell)
    declaration: float = 1.0  # share kept by a header's declaration of a candidate defined elsewhere

    def label(self) -> str:
        """A short name."""
        extra = f" decl{self.declaration:g}" if self.declaration != 1.0 else ""
        return f"k{self.keyword:g} c{self.keyword_c:g} str{self.strength:g}{extra}"


PREVIOUS = Setting(0.3, 1.5, 0.0)
TODAY = Setting(0.5, 2.5, 40.0)
STEPS = {
    "previous main (k0.3 c1.5 str0)": PREVIOUS,
    "+ keyword 0.5, C 2.5": Setting(0.5, 2.5, 0.0),
    "+ strength 40 only": Setting(0.3, 1.5, 40.0),
    "today's main (k0.5 c2.5 str40)": TODAY,
}
C_WEIGHTS = (0.5, 1.0, 1.5, 2.0, 2.5, 3.0)
DECLARATION_SHARES = (1.0, 0.75, 0.5, 0.25)


def fused(m: npt.NDArray[numpy.float64], s: Setting) -> npt.NDArray[numpy.float64]:
    """One query's fused scores under `s`, from its rows."""
    keyword = m[:, _COL["keyword"]]
    has = keyword > 0
    coverage = float((m[has, _COL["keyword_cov"]] / keyword[has]).max()) if has.any() else 0.0
    top = m[keyword >= keyword.max() - 1e-12, _COL["keyword_abs"]] if has.any() else numpy.zeros(1)
    best_bm25 = float(top.max()) * _STRENGTH_OF_ROWS  # exact below 40; at least 40 otherwise
    strength = min(1.0, best_bm25 / s.strength) if s.strength > 0 else 1.0
    c = m[:, _COL["c_family"]] > 0
    weight = numpy.where(c, s.keyword_c, s.keyword) * coverage * strength
    share = numpy.where((m[:, _COL["prose"]] > 0) | (m[:, _COL["test"]] > 0), _SHARE, 1.0)
    share = share * numpy.where(m[:, _COL["declaration"]] > 0, s.declaration, 1.0)
    return share * (m[:, _COL["vector"]] + weight * keyword)


def ranks(rows: Rows, s: Setting) -> list[int | None]:
    """The first answer's rank per query in the fused order (ties by row), None past 10."""
    out: list[int | None] = []
    for m, y in rows.queries():
        if not y.any():
            out.append(None)
            continue
        order = numpy.lexsort((numpy.arange(len(y)), -fused(m, s)))
        rank = int(numpy.flatnonzero(y[order])[0]) + 1
        out.append(rank if rank <= _CUTOFF else None)
    return out


def _mrr(r: list[int | None]) -> float:
    return sum(1.0 / x for x in r if x) / max(1, len(r))


def _hit(r: list[int | None]) -> float:
    return sum(1 for x in r if x) / max(1, len(r))


def first_places(rows: Rows, s: Setting) -> dict[str, float]:
    """Share of queries whose first place is a header, a declaration, keyword-only, or the answer."""
    n = header = declaration = keyword_only = answer = 0
    for m, y in rows.queries():
        n += 1
        top = int(numpy.lexsort((numpy.arange(len(y)), -fused(m, s)))[0]) if len(y) else -1
        if top < 0:
            continue
        header += m[top, _COL["header"]] > 0
        declaration += m[top, _COL["declaration"]] > 0
        keyword_only += m[top, _COL["vector_rr"]] == 0
        answer += bool(y[top])
    return {k: round(v / max(1, n), 3) for k, v in (("header", header), ("declaration", declaration),
                                                     ("keyword only", keyword_only), ("answer", answer))}  # fmt: skip


def disagreements(rows: Rows) -> dict[str, float]:
    """Queries whose vector side and keyword side put different candidates first.

    Share of such queries; how often each side's first is the answer; and how often the
    previous and today's fusion follow the keyword side's first there. The C keyword
    weight does little else than decide these: a first place both sides agree on wins
    under any weight.
    """
    n = split = vector_right = keyword_right = previous_kw = today_kw = 0
    for m, y in rows.queries():
        n += 1
        if not len(y) or m[:, _COL["keyword"]].max() <= 0 or m[:, _COL["vector"]].max() <= 0:
            continue
        v_top = int(numpy.lexsort((numpy.arange(len(y)), -m[:, _COL["vector"]]))[0])
        k_top = int(numpy.lexsort((numpy.arange(len(y)), -m[:, _COL["keyword"]]))[0])
        if v_top == k_top:
            continue
        split += 1
        vector_right += bool(y[v_top])
        keyword_right += bool(y[k_top])
        previous_kw += int(numpy.lexsort((numpy.arange(len(y)), -fused(m, PREVIOUS)))[0]) == k_top
        today_kw += int(numpy.lexsort((numpy.arange(len(y)), -fused(m, TODAY)))[0]) == k_top
    return {
        "split": round(split / max(1, n), 3),
        "vector first right": round(vector_right / max(1, split), 3),
        "keyword first right": round(keyword_right / max(1, split), 3),
        "previous follows keyword": round(previous_kw / max(1, split), 3),
        "today follows keyword": round(today_kw / max(1, split), 3),
    }


def choose(table: dict[Setting, dict[str, float]], among: list[str]) -> Setting:
    """The setting with the best mean MRR@10 over `among` (ties: the first in the grid)."""
    return max(table, key=lambda s: statistics.fmean(table[s][p] for p in among))


def main(argv: list[str] | None = None) -> int:
    """The regression decomposed per C/C++ project, and the leave-one-project-out choice."""
    parser = arg_parser(__doc__)
    c_projects = [n for n, p in PROJECTS.items() if p.language == "c"]
    parser.add_argument("projects", nargs="*", default=c_projects)
    args = parser.parse_args(argv)
    rows: dict[str, Rows] = {}
    for name in args.projects:
        data = numpy.load(ROWS_DIR / f"{name}.npz")
        if tuple(str(f) for f in data["features"]) != FEATURES:
            print(f"{name}: rows are of other features; re-run bench.search.train_ranker", file=sys.stderr)
            return 1
        rows[name] = Rows(name, data["matrix"], data["labels"], data["starts"])
    out: dict[str, Any] = {"steps": {}, "first_places": {}}
    for label, s in STEPS.items():
        out["steps"][label] = {n: {"mrr@10": round(_mrr(r), 4), "hit@10": round(_hit(r), 4)}
                               for n, rw in rows.items() for r in [ranks(rw, s)]}  # fmt: skip
    for label, s in (("previous", PREVIOUS), ("today", TODAY)):
        out["first_places"][label] = {n: first_places(rw, s) for n, rw in rows.items()}
    out["disagreements"] = {n: disagreements(rw) for n, rw in rows.items()}
    grid = [Setting(0.5, c, 40.0, d) for c, d in itertools.product(C_WEIGHTS, DECLARATION_SHARES)]
    table = {s: {n: _mrr(ranks(rw, s)) for n, rw in rows.items()} for s in grid}
    folds = {}
    for held in rows:
        chosen = choose(table, [n for n in rows if n != held])
        folds[held] = {"chosen": chosen.label(), "held_out_mrr@10": round(table[chosen][held], 4),
                       "today_mrr@10": round(table[Setting(0.5, 2.5, 40.0)][held], 4)}  # fmt: skip
    out["folds"] = folds
    out["grid"] = {s.label(): {n: round(v, 4) for n, v in row.items()} for s, row in table.items()}
    (OUT_DIR / "c_fusion.json").write_text(json.dumps(out, indent=1))
    print(markdown(out, list(rows)))
    return 0


def markdown(out: dict[str, Any], projects: list[str]) -> str:
    """The steps table, the first places, the folds."""
    lines = [
        "| fusion (rows, no anchors) | " + " | ".join(projects) + " | mean |",
        "| --- |" + " ---: |" * (len(projects) + 1),
    ]
    for label, per in out["steps"].items():
        cells = [f"{per[p]['mrr@10']:.3f} / {per[p]['hit@10']:.2f}" for p in projects]
        lines.append(
            f"| {label} | " + " | ".join(cells) + f" | {statistics.fmean(per[p]['mrr@10'] for p in projects):.3f} |"
        )
    lines += [
        "",
        "| first place (previous -> today) | " + " | ".join(projects) + " |",
        "| --- |" + " ---: |" * len(projects),
    ]
    for kind in ("answer", "header", "declaration", "keyword only"):
        cells = [
            f"{out['first_places']['previous'][p][kind]:.2f} -> {out['first_places']['today'][p][kind]:.2f}"
            for p in projects
        ]
        lines.append(f"| {kind} | " + " | ".join(cells) + " |")
    lines += ["", "| vector first != keyword first | " + " | ".join(projects) + " |"]
    lines.append("| --- |" + " ---: |" * len(projects))
    for kind in next(iter(out["disagreements"].values())):
        lines.append(f"| {kind} | " + " | ".join(f"{out['disagreements'][p][kind]:.2f}" for p in projects) + " |")
    lines += [
        "",
        "| held out | chosen on the other C/C++ projects | held-out MRR@10 | today's |",
        "| --- | --- | ---: | ---: |",
    ]
    for held, f in out["folds"].items():
        lines.append(f"| {held} | {f['chosen']} | {f['held_out_mrr@10']:.3f} | {f['today_mrr@10']:.3f} |")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
