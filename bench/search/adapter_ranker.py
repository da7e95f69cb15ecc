"""The query adapter and the learned ranker measured together, held out (issue 22).

Reads the two runs of train_ranker.py over the same projects and tabulates, per project,
MRR@10 / hit@10 of stage 1 (depth 0, offline, over the indexes a daemon built):

- BM25: the baseline over perfect function chunks;
- (a) plain query vectors, the ranker trained on the other projects' plain rows (what
  ships today: the adapter off, the ranker on);
- (b) the adapter's query vectors, the same held-out model as (a): turning the adapter on
  with a ranker trained without it;
- (c) the adapter's query vectors, the ranker trained on the other projects' rows built
  with the adapter;
- for reference, the fusion alone without and with the adapter, and (b) with the weights
  that ship today (trained on every project, this one included: not held out).

Then the decision rule, on held-out numbers only: (c) ships if its mean MRR@10 is above
(a)'s and no project's MRR@10 is more than 0.01 below its (a).

    python -m bench.search.train_ranker PROJECTS...             # (a): the plain rows and models
    python -m bench.search.train_ranker --adapter PROJECTS...   # (b), (c)
    python -m bench.search.adapter_ranker

Output: bench/out/search/adapter_ranker.json and markdown on stdout.
"""

from __future__ import annotations

import json
import statistics
import sys
from typing import Any

from bench.runner import arg_parser
from bench.search.corpus import OUT_DIR, PROJECTS

__all__ = ["combine", "decide", "markdown"]

# Largest loss of MRR@10 on any one project that (c) may cost against (a).
MAX_LOSS = 0.01
COLUMNS = ("bm25", "a", "b", "c")


def combine(plain: dict[str, Any], adapted: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Per project (in the plain run's order), every column's score from the two runs."""
    out: dict[str, dict[str, Any]] = {}
    for name, p in plain["held_out"].items():
        a = adapted["held_out"].get(name)
        if a is None:
            continue
        out[name] = {
            "bm25": p["bm25"],
            "a": p["learned"],
            "b": a["plain_model"],
            "c": a["learned"],
            "fusion": p["fusion"],
            "fusion + adapter": a["fusion"],
            "b, shipped weights (not held out)": a["shipped_weights"],
        }
    return out


def decide(rows: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The rule: (c) above (a) on mean MRR@10, and no project more than MAX_LOSS below its (a)."""
    mean = {k: statistics.fmean(r[k]["mrr@10"] for r in rows.values()) for k in COLUMNS}
    losses = {n: r["c"]["mrr@10"] - r["a"]["mrr@10"] for n, r in rows.items()}
    worst = min(losses, key=lambda n: losses[n])
    ship = mean["c"] > mean["a"] and losses[worst] >= -MAX_LOSS
    return {"mean_mrr@10": mean, "worst": {"project": worst, "c - a": losses[worst]}, "ship": ship}


def _cell(score: dict[str, Any]) -> str:
    return f"{score['mrr@10']:.3f} / {score['hit@10']:.2f}"


def markdown(rows: dict[str, dict[str, Any]], verdict: dict[str, Any]) -> str:
    """The 14-row table, the means, the goals, and the rule's verdict."""
    lines = [
        "| project | lang | queries | BM25 | (a) plain + ranker | (b) adapter + (a)'s ranker "
        "| (c) adapter + ranker retrained | c - a | fusion alone, without → with adapter "
        "| (b) with the shipped weights |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for name, r in rows.items():
        lang = PROJECTS[name].language if name in PROJECTS else ""
        lines.append(
            f"| {name} | {lang} | {r['a']['n']} | {_cell(r['bm25'])} | {_cell(r['a'])} | {_cell(r['b'])} "
            f"| {_cell(r['c'])} | {r['c']['mrr@10'] - r['a']['mrr@10']:+.3f} "
            f"| {r['fusion']['mrr@10']:.3f} → {r['fusion + adapter']['mrr@10']:.3f} "
            f"| {_cell(r['b, shipped weights (not held out)'])} |"
        )
    mean = verdict["mean_mrr@10"]
    means = " | ".join(f"{mean[k]:.3f}" for k in COLUMNS)
    lines.append(f"| mean MRR@10 | | | {means} | {mean['c'] - mean['a']:+.3f} | | |")
    n = len(rows)
    lines += ["", "| goal (issue 22) | BM25 | (a) | (b) | (c) |", "| --- | ---: | ---: | ---: | ---: |"]
    for goal, key, bound in (("MRR@10 ≥ 0.6", "mrr@10", 0.6), ("hit@10 ≥ 0.85", "hit@10", 0.85)):
        counts = [sum(1 for r in rows.values() if r[k][key] >= bound) for k in COLUMNS]
        lines.append(f"| {goal} | " + " | ".join(f"{c} of {n}" for c in counts) + " |")
    worst = verdict["worst"]
    lines += [
        "",
        f"Rule: (c) ships if its mean MRR@10 is above (a)'s and no project loses more than {MAX_LOSS} "
        f"against (a). Mean (c) - (a) {mean['c'] - mean['a']:+.4f}; largest loss {worst['c - a']:+.4f} "
        f"({worst['project']}): **{'ship' if verdict['ship'] else 'do not ship'}**.",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Tabulate the plain and the adapter run of train_ranker."""
    parser = arg_parser(__doc__)
    parser.add_argument("--plain", default="train_ranker", help="the plain run's output (its --label)")
    parser.add_argument("--adapted", default="train_ranker-adapter", help="the adapter run's output")
    args = parser.parse_args(argv)
    plain = json.loads((OUT_DIR / f"{args.plain}.json").read_text())
    adapted = json.loads((OUT_DIR / f"{args.adapted}.json").read_text())
    rows = combine(plain, adapted)
    if not rows:
        raise SystemExit("the two runs share no project")
    verdict = decide(rows)
    (OUT_DIR / "adapter_ranker.json").write_text(
        json.dumps({"adapter": adapted.get("adapter"), "rows": rows, "verdict": verdict}, indent=1)
    )
    print(markdown(rows, verdict))
    return 0


if __name__ == "__main__":
    sys.exit(main())
