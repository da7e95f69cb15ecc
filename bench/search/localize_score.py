"""Scoring a ranking against a commit's changed functions: recall@10, recall@20, reciprocal rank.

A ranked item is (file path, 0-based start line). It finds an answer when it is in
the answer's file and starts within the function's lines: the function itself
(language servers differ on whether decorators belong to its range) or something
defined inside it, which lands the reader in it too. recall@k is the share of the
commit's changed functions found among the first k items; the reciprocal rank is
1 / the rank of the first item finding any of them, 0 when none of the first 20 does.
Projects are scored by the mean over their commits.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["DEPTH", "Target", "aggregate", "markdown_table", "score", "targets_of"]

DEPTH = 20
CUTOFFS = (10, 20)


@dataclass(frozen=True, slots=True)
class Target:
    """One changed function: where it was in the parent."""

    path: str
    first_line: int
    end_line: int

    def found_by(self, path: str, line: int) -> bool:
        """Whether a ranked item at (path, start line) lands in this function."""
        return path == self.path and self.first_line <= line <= self.end_line


def targets_of(answers: Sequence[Mapping[str, Any]]) -> list[Target]:
    """The mined answers of one commit."""
    return [Target(str(a["path"]), int(a["first_line"]), int(a["end_line"])) for a in answers]


def score(targets: Sequence[Target], ranked: Sequence[tuple[str, int]]) -> dict[str, Any]:
    """recall@10, recall@20, reciprocal rank and the rank of each target found (None if not in the first 20)."""
    ranks: list[int | None] = []
    for target in targets:
        rank = next((i for i, (p, line) in enumerate(ranked[:DEPTH], 1) if target.found_by(p, line)), None)
        ranks.append(rank)
    found = [r for r in ranks if r is not None]
    out: dict[str, Any] = {f"recall@{k}": sum(1 for r in found if r <= k) / len(targets) for k in CUTOFFS}
    out["rr"] = 1.0 / min(found) if found else 0.0
    out["ranks"] = ranks
    return out


def aggregate(per_commit: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    """Mean recall@10, recall@20 and MRR over commits."""
    if not per_commit:
        return {"n": 0, "recall@10": 0.0, "recall@20": 0.0, "mrr": 0.0}
    return {
        "n": len(per_commit),
        "recall@10": round(statistics.fmean(s["recall@10"] for s in per_commit), 4),
        "recall@20": round(statistics.fmean(s["recall@20"] for s in per_commit), 4),
        "mrr": round(statistics.fmean(s["rr"] for s in per_commit), 4),
    }


def markdown_table(
    results: Mapping[str, Mapping[str, Any]], strategies: Mapping[str, str], *, ratios: bool = True
) -> str:
    """One row per project: recall@10 / recall@20 / MRR of each strategy, then (with `ratios`) the goals' ratios."""
    names = list(strategies)
    if not ratios:
        lines = ["| project | commits | " + " | ".join(strategies[n] for n in names) + " |"]
        lines.append("| --- | ---: |" + " ---: |" * len(names))
        for project, result in results.items():
            q = result["quality"]
            cells = " | ".join(f"{q[n]['recall@10']:.3f} / {q[n]['recall@20']:.3f} / {q[n]['mrr']:.3f}" for n in names)
            lines.append(f"| {project} | {q[names[0]]['n']} | {cells} |")
        means = {
            n: {
                m: statistics.fmean(r["quality"][n][m] for r in results.values())
                for m in ("recall@10", "recall@20", "mrr")
            }
            for n in names
        }
        total = sum(r["quality"][names[0]]["n"] for r in results.values())
        cells = " | ".join(
            f"{means[n]['recall@10']:.3f} / {means[n]['recall@20']:.3f} / {means[n]['mrr']:.3f}" for n in names
        )
        lines.append(f"| mean of projects | {total} | {cells} |")
        return "\n".join(lines)
    head = "| project | commits | " + " | ".join(strategies[n] for n in names)
    head += " | full / BM25 (R@10) | full / vector (R@10) | full - stage 1 (R@20) |"
    lines = [head, "| --- | ---: |" + " ---: |" * len(names) + " ---: | ---: | ---: |"]
    gains: list[float] = []
    for project, result in results.items():
        q = result["quality"]
        cells = " | ".join(
            f"{q[n]['recall@10']:.3f} / {q[n]['recall@20']:.3f} / {q[n]['mrr']:.3f}" if n in q else "-" for n in names
        )
        full, bm25, vector, stage1 = (q.get(n, {}) for n in ("full", "bm25", "vector", "stage1"))
        gain = full.get("recall@20", 0.0) - stage1.get("recall@20", 0.0)
        gains.append(gain)
        lines.append(
            f"| {project} | {q['full']['n'] if 'full' in q else 0} | {cells} | {_ratio(full, bm25)} | "
            f"{_ratio(full, vector)} | {gain:+.3f} |"
        )
    if gains:
        lines.append(f"| mean | | {' | '.join('' for _ in names)} | | | {statistics.fmean(gains):+.3f} |")
    return "\n".join(lines)


def _ratio(a: Mapping[str, float], b: Mapping[str, float]) -> str:
    if not a or not b:
        return "-"
    if b.get("recall@10", 0.0) == 0:
        return "inf" if a.get("recall@10", 0.0) > 0 else "-"
    return f"{a['recall@10'] / b['recall@10']:.2f}x"
