"""Scoring ranked answers against the stripped functions: MRR@10, hit@1, hit@10.

A ranked item is (file path, 0-based start line). It answers a query when it is in
the answer's file and starts between the function's first decorator and its `def`
line (language servers differ on whether a symbol's range includes decorators).
Queries with the same text (copied docstrings, overloads) are one item whose
answers are all those functions: any of them counts.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["Answer", "EvalItem", "group_queries", "rank_of", "sample", "score", "summarise_latency"]

CUTOFF = 10


@dataclass(frozen=True, slots=True)
class Answer:
    """Where one answering function is."""

    path: str
    qualname: str
    first_line: int
    def_line: int

    def matches(self, path: str, line: int) -> bool:
        """Whether a ranked item at (path, start line) is this function."""
        return path == self.path and self.first_line <= line <= self.def_line


@dataclass(frozen=True, slots=True)
class EvalItem:
    """One distinct query text and every function it may name."""

    query: str
    answers: tuple[Answer, ...]


def group_queries(queries: Iterable[Mapping[str, Any]]) -> list[EvalItem]:
    """queries.json entries grouped by text, in first-appearance order."""
    grouped: dict[str, list[Answer]] = {}
    for q in queries:
        answer = Answer(str(q["path"]), str(q["qualname"]), int(q["first_line"]), int(q["def_line"]))
        grouped.setdefault(str(q["query"]), []).append(answer)
    return [EvalItem(text, tuple(answers)) for text, answers in grouped.items()]


def sample(items: Sequence[EvalItem], most: int | None) -> list[EvalItem]:
    """At most `most` items, evenly spaced through the list (all of them for None): for a quick look."""
    if most is None or most >= len(items):
        return list(items)
    step = len(items) / most
    return [items[int(i * step)] for i in range(most)]


def rank_of(item: EvalItem, ranked: Sequence[tuple[str, int]], cutoff: int = CUTOFF) -> int | None:
    """1-based rank of the first answer among the first `cutoff` items, None if absent."""
    for rank, (path, line) in enumerate(ranked[:cutoff], 1):
        if any(a.matches(path, line) for a in item.answers):
            return rank
    return None


def score(ranks: Sequence[int | None]) -> dict[str, float]:
    """MRR@10, hit@1 and hit@10 over one strategy's ranks."""
    n = len(ranks)
    if n == 0:
        return {"n": 0, "mrr@10": 0.0, "hit@1": 0.0, "hit@10": 0.0}
    return {
        "n": n,
        "mrr@10": round(sum(1.0 / r for r in ranks if r is not None) / n, 4),
        "hit@1": round(sum(1 for r in ranks if r == 1) / n, 4),
        "hit@10": round(sum(1 for r in ranks if r is not None) / n, 4),
    }


def _percentile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return 0.0
    # Nearest rank: the value below which q of the samples fall.
    index = max(0, min(len(ordered) - 1, round(q * len(ordered) + 0.5) - 1))
    return ordered[index]


def summarise_latency(samples: Sequence[float]) -> dict[str, float]:
    """p50, p95, mean and max of milliseconds."""
    if not samples:
        return {"n": 0, "p50": 0.0, "p95": 0.0, "mean": 0.0, "max": 0.0}
    return {
        "n": len(samples),
        "p50": round(_percentile(samples, 0.50), 2),
        "p95": round(_percentile(samples, 0.95), 2),
        "mean": round(statistics.fmean(samples), 2),
        "max": round(max(samples), 2),
    }
