"""The learned call graph of one snapshot, as graph/index/sqlite/learned.py keeps it for the embedded store.

Rows cascade with the symbols they name; a write of files forgets, in the same transaction,
what the write may have changed (the subjects related to a rewritten file's symbols, and
those whose name, or for a dunder or operator their class's, the written text spells).
"""

from __future__ import annotations

import time
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any

import psycopg

from lensmux.graph.index.builder.preparing.document_symbols import CHUNKED_KINDS
from lensmux.graph.index.identifiers import called_without_name
from lensmux.graph.index.interface import Learned, learned_symbols, storable_relations

_KINDS = sorted(CHUNKED_KINDS)


def recall(conn: psycopg.Connection[Any], snapshot: int, ids: Iterable[int]) -> Learned:
    """The stored relations of those of `ids` that are learned, in the order they were stored."""
    wanted = sorted(set(ids))
    if not wanted:
        return {}
    out: Learned = {}
    for (subject,) in conn.execute(
        "SELECT symbol_id FROM lensmux.learned WHERE snapshot = %s AND symbol_id = ANY(%s)", (snapshot, wanted)
    ):
        out[int(subject)] = []
    rows = conn.execute(
        "SELECT subject_id, relation, other_id FROM lensmux.learned_edges"
        " WHERE snapshot = %s AND subject_id = ANY(%s) ORDER BY subject_id, rank",
        (snapshot, wanted),
    )
    for subject, relation, other in rows:
        out[int(subject)].append((str(relation), int(other)))
    return out


def remember(
    conn: psycopg.Connection[Any], snapshot: int, repo: str, learned: Mapping[int, Sequence[tuple[str, int]]]
) -> int:
    """Store each subject's relations, replacing what it had; subjects naming a vanished symbol are skipped."""
    involved = sorted(learned_symbols(learned))
    alive = {
        int(r[0])
        for r in conn.execute(
            "SELECT id FROM lensmux.symbols WHERE snapshot = %s AND id = ANY(%s)", (snapshot, involved)
        )
    }
    now = time.time()
    stored = 0
    with conn.cursor() as cur:
        for subject, relations in storable_relations(learned, alive):
            cur.execute(
                "INSERT INTO lensmux.learned(symbol_id, snapshot, repo, learned_at) VALUES (%s, %s, %s, %s)"
                " ON CONFLICT (symbol_id) DO UPDATE SET learned_at = excluded.learned_at",
                (subject, snapshot, repo, now),
            )
            cur.execute("DELETE FROM lensmux.learned_edges WHERE subject_id = %s", (subject,))
            cur.executemany(
                "INSERT INTO lensmux.learned_edges(subject_id, snapshot, repo, relation, other_id, rank)"
                " VALUES (%s, %s, %s, %s, %s, %s)",
                [(subject, snapshot, repo, relation, other, rank) for rank, (relation, other) in enumerate(relations)],
            )
            stored += 1
    return stored


def forget_related(conn: psycopg.Connection[Any], file_id: int) -> None:
    """Forget every subject related to a symbol of the file (call before its symbols go)."""
    conn.execute(
        "DELETE FROM lensmux.learned WHERE symbol_id IN (SELECT e.subject_id FROM lensmux.learned_edges e"
        " JOIN lensmux.symbols s ON s.id = e.other_id WHERE s.file_id = %s)",
        (file_id,),
    )


def forget_mentioned(conn: psycopg.Connection[Any], snapshot: int, words: Collection[str]) -> int:
    """Forget every learned subject whose name (or, for a dunder or operator, its class's) is in words."""
    if not words:
        return 0
    row = conn.execute("SELECT EXISTS (SELECT 1 FROM lensmux.learned WHERE snapshot = %s)", (snapshot,)).fetchone()
    if not row or not row[0]:
        return 0
    candidates = _named(conn, snapshot, words)
    if not candidates:
        return 0
    gone = conn.execute(
        "DELETE FROM lensmux.learned WHERE symbol_id = ANY(%s) RETURNING symbol_id", (candidates,)
    ).fetchall()
    return len(gone)


def stale(
    conn: psycopg.Connection[Any], snapshot: int, words: Collection[str], paths: Collection[str]
) -> dict[int, str]:
    """Learned subjects (id -> kind) that writing the files at `paths`, spelling `words`, would forget.

    What forget_mentioned and forget_related would delete, and the subjects of those files
    themselves, read instead of deleted: an overlay (graph/index/team/overlay.py) masks these
    files of a snapshot it may not write.
    """
    candidates = _named(conn, snapshot, words) if words else []
    in_paths = "JOIN lensmux.files f ON f.id = o.file_id WHERE f.snapshot = %(s)s AND f.path = ANY(%(paths)s)"
    rows = conn.execute(
        "SELECT s.id, s.kind FROM lensmux.symbols s WHERE s.id IN ("
        " SELECT symbol_id FROM lensmux.learned WHERE snapshot = %(s)s AND symbol_id = ANY(%(named)s)"
        " UNION SELECT e.subject_id FROM lensmux.learned_edges e"
        f" JOIN lensmux.symbols o ON o.id = e.other_id {in_paths}"
        f" UNION SELECT l.symbol_id FROM lensmux.learned l JOIN lensmux.symbols o ON o.id = l.symbol_id {in_paths})",
        {"s": snapshot, "named": candidates, "paths": sorted(paths)},
    ).fetchall()
    return {int(i): str(kind) for i, kind in rows}


def _named(conn: psycopg.Connection[Any], snapshot: int, words: Collection[str]) -> list[int]:
    """Symbols whose name is one of words, and the members of those called without spelling theirs."""
    named = [
        int(r[0])
        for r in conn.execute(
            "SELECT id FROM lensmux.symbols WHERE snapshot = %s AND lower(name) = ANY(%s) AND name = ANY(%s)",
            (snapshot, sorted({w.lower() for w in words}), sorted(words)),
        )
    ]
    if not named:
        return []
    members = conn.execute("SELECT id, name, kind FROM lensmux.symbols WHERE parent_id = ANY(%s)", (named,)).fetchall()
    return named + [int(i) for i, name, kind in members if called_without_name(name, kind)]


def unlearned(
    conn: psycopg.Connection[Any], snapshot: int, after_id: int, limit: int, languages: Collection[str] | None = None
) -> list[int]:
    """Up to `limit` ids above after_id, in id order, of symbols a search expands and nobody has learned.

    With `languages`, only symbols of files in those languages.
    """
    in_files = (
        ""
        if languages is None
        else " AND s.file_id IN (SELECT f.id FROM lensmux.files f WHERE f.snapshot = %(s)s AND f.language = ANY(%(l)s))"
    )
    rows = conn.execute(
        "SELECT s.id FROM lensmux.symbols s WHERE s.snapshot = %(s)s AND s.id > %(a)s AND s.kind = ANY(%(k)s)"
        + in_files
        + " AND NOT EXISTS (SELECT 1 FROM lensmux.learned l WHERE l.symbol_id = s.id) ORDER BY s.id LIMIT %(n)s",
        {"s": snapshot, "a": after_id, "k": _KINDS, "l": sorted(languages or ()), "n": limit},
    )
    return [int(r[0]) for r in rows]


def counts(conn: psycopg.Connection[Any], snapshot: int) -> tuple[int, int]:
    """(learned, learnable) symbols."""
    row = conn.execute(
        "SELECT (SELECT count(*) FROM lensmux.symbols WHERE snapshot = %(s)s AND kind = ANY(%(k)s)),"
        " (SELECT count(*) FROM lensmux.learned l JOIN lensmux.symbols s ON s.id = l.symbol_id"
        "  WHERE l.snapshot = %(s)s AND s.kind = ANY(%(k)s))",
        {"s": snapshot, "k": _KINDS},
    ).fetchone()
    assert row is not None  # an aggregate always returns a row
    return int(row[1]), int(row[0])
