"""What the call graph could add to stage 1: which changed functions it missed lie next to its top seeds.

Expansion starts from stage 1's first few results (the shipped `expansion_seeds`, 5)
and walks the call hierarchy and references. If the functions a commit changed that
stage 1 did not rank in its first 20 are callers, callees or referrers of those seeds,
the graph stages can reach them; if they are not, no reranking of the graph can. This
reads the graph the daemon learned (the `learned_edges` of the index copy,
localize_index.py), both directions, one and two hops, with every symbol taken up to
the outermost function or method that holds it (an answer is an outermost function).
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from bench.search.localize_score import Target
from lensmux.graph.index.builder.preparing.document_symbols import CALLABLE_KINDS

__all__ = ["SEEDS", "graph_reach"]

SEEDS = 5


def _outermost(
    conn: sqlite3.Connection,
) -> tuple[dict[int, int], dict[tuple[str, int], int], list[tuple[int, str, int, int]]]:
    """Each symbol's outermost callable ancestor (itself if none), symbols by (path, start line), callables."""
    rows = list(
        conn.execute(
            "SELECT s.id, s.parent_id, s.kind, f.path, s.start_line, s.end_line"
            " FROM symbols s JOIN files f ON f.id = s.file_id"
        )
    )
    parent = {r[0]: r[1] for r in rows}
    callable_ids = {r[0] for r in rows if r[2] in CALLABLE_KINDS}
    up: dict[int, int] = {}
    for sid in parent:
        top, node = sid, parent.get(sid)
        while node is not None:
            if node in callable_ids:
                top = node
            node = parent.get(node)
        up[sid] = top
    at = {(str(r[3]), int(r[4])): r[0] for r in rows}
    callables = [(r[0], str(r[3]), int(r[4]), int(r[5])) for r in rows if r[0] in callable_ids and up[r[0]] == r[0]]
    return up, at, callables


def _neighbours(edges: Mapping[int, set[int]], start: Iterable[int]) -> set[int]:
    out: set[int] = set()
    for node in start:
        out |= edges.get(node, set())
    return out


def graph_reach(
    db: Path, targets: Sequence[Target], ranks: Sequence[int | None], stage1: Sequence[tuple[str, int]]
) -> dict[str, Any]:
    """For the targets stage 1 missed (rank None), how many are 1 or 2 hops from its first SEEDS results."""
    missed = [t for t, r in zip(targets, ranks, strict=True) if r is None]
    with contextlib.closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True)) as conn:
        up, at, callables = _outermost(conn)
        edges: dict[int, set[int]] = {}
        for subject, other in conn.execute("SELECT subject_id, other_id FROM learned_edges"):
            a, b = up.get(subject, subject), up.get(other, other)
            if a != b:
                edges.setdefault(a, set()).add(b)
                edges.setdefault(b, set()).add(a)
        learned = {up.get(s, s) for (s,) in conn.execute("SELECT symbol_id FROM learned")}
    seeds = {up[at[item]] for item in stage1[:SEEDS] if item in at}
    one = _neighbours(edges, seeds)
    two = one | _neighbours(edges, one)

    def symbol_of(t: Target) -> int | None:
        return next(
            (
                sid
                for sid, path, start, end in callables
                if path == t.path and start <= t.end_line and t.first_line <= end
            ),
            None,
        )

    ids = [symbol_of(t) for t in missed]
    return {
        "missed_by_stage1": len(missed),
        "missed_in_index": sum(1 for i in ids if i is not None),
        "missed_learned": sum(1 for i in ids if i is not None and i in learned),
        "missed_1_hop_from_seeds": sum(1 for i in ids if i is not None and i in one),
        "missed_2_hops_from_seeds": sum(1 for i in ids if i is not None and i in two),
        "seeds_mapped": len(seeds),
    }
