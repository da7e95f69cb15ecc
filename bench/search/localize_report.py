"""The localization benchmark's tables from saved runs, finished or not (for docs/benchmarks.md).

    python -m bench.search.localize_report --label sub        # daemon runs run-*-sub.json, offline-*.json

Prints the in-process table (every commit of offline-<project>.json), the daemon
table (the commits run-<project>[-<label>].json holds so far: a run stopped midway
is reported on the commits it finished), the per-stage differences on those commits,
and what the call graph could reach of the functions stage 1 missed (localize_reach.py).
"""

from __future__ import annotations

import itertools
import json
import statistics
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from bench.runner import arg_parser
from bench.search.localize import LABELS
from bench.search.localize import quality as daemon_quality
from bench.search.localize_mine import OUT_DIR
from bench.search.localize_offline import LABELS as OFFLINE_LABELS
from bench.search.localize_score import aggregate, markdown_table

STAGES = ("stage1", "expansion", "louvain", "nofill", "full")
REACH = (
    "missed_by_stage1",
    "missed_in_index",
    "missed_learned",
    "missed_1_hop_from_seeds",
    "missed_2_hops_from_seeds",
)


def _load(pattern: str) -> dict[str, dict[str, Any]]:
    out = {}
    for path in sorted(OUT_DIR.glob(pattern)):
        result = json.loads(path.read_text())
        if result.get("commits"):
            out[str(result["project"])] = result
    return out


def offline_table() -> str:
    """BM25 and vector-only over every commit of each project."""
    results = _load("offline-*.json")
    for result in results.values():
        result["quality"] = {n: aggregate([c["scores"][n] for c in result["commits"]]) for n in OFFLINE_LABELS}
    return markdown_table(results, OFFLINE_LABELS, ratios=False)


def stage_changes(commits: Sequence[Mapping[str, Any]]) -> str:
    """How many commits each graph stage moved, against the stage before it, at recall@20 and MRR."""
    lines = []
    for before, after in itertools.pairwise(STAGES):
        up = sum(1 for c in commits if c["scores"][after]["recall@20"] > c["scores"][before]["recall@20"])
        down = sum(1 for c in commits if c["scores"][after]["recall@20"] < c["scores"][before]["recall@20"])
        rr = sum(1 for c in commits if c["scores"][after]["rr"] != c["scores"][before]["rr"])
        lines.append(f"{after} vs {before}: recall@20 up in {up}, down in {down}; first-answer rank moved in {rr}")
    return "; ".join(lines)


def reach_summary(commits: Sequence[Mapping[str, Any]]) -> str:
    """Sum of localize_reach's counts over the commits that have them."""
    have = [c["graph_reach"] for c in commits if c.get("graph_reach")]
    totals = {k: sum(int(r[k]) for r in have) for k in REACH}
    expansion_only = sum(int(c.get("expansion_only_answers_in_full", 0)) for c in commits)
    placed = sum(int(c.get("neighbour_answers_in_full", 0)) for c in commits)
    slots = sum(sum(c["daemon"]["full"].get("neighbours", [])) for c in commits if "full" in c.get("daemon", {}))
    return (
        f"{len(have)} commits with the graph read: {json.dumps(totals)}; answers in the full pipeline's first 20 "
        f"that only expansion found: {expansion_only}; places the neighbour fill took: {slots}, "
        f"answers among them: {placed}"
    )


def main(argv: list[str] | None = None) -> int:
    """Print the tables."""
    parser = arg_parser(__doc__)
    parser.add_argument("--label", default="", help="the label of the daemon runs")
    args = parser.parse_args(argv)
    print("### in process (every commit)\n")
    print(offline_table())
    suffix = f"-{args.label}" if args.label else ""
    runs = {name: r for name, r in _load(f"run-*{suffix}.json").items() if suffix or "-" not in name}
    if not runs:
        return 0
    for result in runs.values():
        result["quality"] = daemon_quality(result["commits"])
    order = [n for n in LABELS if any(n in r["quality"] for r in runs.values())]
    print("\n### through the daemon\n")
    print(markdown_table(runs, {n: LABELS[n] for n in order}))
    for name, result in runs.items():
        commits = result["commits"]
        loads = [c["loadavg"][0] for c in commits]
        print(f"\n{name}: {stage_changes(commits)}")
        print(f"{name}: {reach_summary(commits)}")
        learn = [c["learning"]["wall_s"] for c in commits if c.get("learning")]
        print(
            f"{name}: load (1 min) {min(loads):.1f}-{max(loads):.1f}; per commit: index "
            f"{statistics.median(c['timings']['index_s'] for c in commits):.1f} s, learn "
            f"{statistics.median(learn) if learn else 0:.0f} s, all stages' searches "
            f"{statistics.median(c['timings']['search_s'] for c in commits):.2f} s (medians)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
