"""The call graph the search learned from the language servers, kept with the index.

A symbol is *learned* when every relation a search would ask its server about (callees,
callers, referrers) is stored, so a later search reads them instead of asking. Writes of
files forget what they may have changed, in the same transaction as the write:

- a rewrite or removal of the symbol's own file, or of the file of any symbol it is
  related to: those symbol ids are replaced (ON DELETE CASCADE, and `forget_related`);
- a write of any file that mentions the symbol's name, because a new caller or
  referrer has to spell it (for a dunder method or an operator: its class's name).

What is forgotten is asked of the server again by the next search that needs it.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Collection, Iterable, Mapping, Sequence

from lensmux.graph.index.builder.preparing.document_symbols import CHUNKED_KINDS
from lensmux.graph.index.identifiers import called_without_name, mentions
from lensmux.graph.index.interface import RELATIONS, Learned, learned_symbols, storable_relations

__all__ = ["RELATIONS", "Learned", "forget_mentioned", "forget_related", "mentions"]

_KINDS = "(" + ",".join(f"'{k}'" for k in sorted(CHUNKED_KINDS)) + ")"
_BATCH = 500


def _marks(n: int) -> str:
    return ",".join("?" * n)


def _batches(ids: Iterable[int]) -> Iterable[list[int]]:
    wanted = sorted(set(ids))
    for start in range(0, len(wanted), _BATCH):
        yield wanted[start : start + _BATCH]


def recall(conn: sqlite3.Connection, ids: Iterable[int]) -> Learned:
    """The stored relations of those of `ids` that are learned, in the order they were stored."""
    out: Learned = {}
    for part in _batches(ids):
        marks = _marks(len(part))
        for (subject,) in conn.execute(f"SELECT symbol_id FROM learned WHERE symbol_id IN ({marks})", part):
            out[subject] = []
        rows = conn.execute(
            f"SELECT subject_id, relation, other_id FROM learned_edges WHERE subject_id IN ({marks})"
            " ORDER BY subject_id, rank",
            part,
        )
        for subject, relation, other in rows:
            out[subject].append((relation, other))
    return out


def remember(conn: sqlite3.Connection, learned: Mapping[int, Sequence[tuple[str, int]]]) -> int:
    """Store each subject's relations, replacing what it had; subjects naming a vanished symbol are skipped."""
    involved = learned_symbols(learned)
    alive: set[int] = set()
    for part in _batches(involved):
        alive.update(r[0] for r in conn.execute(f"SELECT id FROM symbols WHERE id IN ({_marks(len(part))})", part))
    now = time.time()
    stored = 0
    for subject, relations in storable_relations(learned, alive):
        # An upsert, not INSERT OR REPLACE: a replaced row would not reach the count triggers' delete.
        conn.execute(
            "INSERT INTO learned(symbol_id, learned_at) VALUES (?, ?)"
            " ON CONFLICT(symbol_id) DO UPDATE SET learned_at = excluded.learned_at",
            (subject, now),
        )
        conn.execute("DELETE FROM learned_edges WHERE subject_id = ?", (subject,))
        conn.executemany(
            "INSERT INTO learned_edges(subject_id, relation, other_id, rank) VALUES (?, ?, ?, ?)",
            [(subject, relation, other, rank) for rank, (relation, other) in enumerate(relations)],
        )
        stored += 1
    return stored


def forget_related(conn: sqlite3.Connection, file_id: int) -> None:
    """Forget every subject related to a symbol of the file (call before its symbols go)."""
    conn.execute(
        "DELETE FROM learned WHERE symbol_id IN (SELECT e.subject_id FROM learned_edges e"
        " JOIN symbols s ON s.id = e.other_id WHERE s.file_id = ?)",
        (file_id,),
    )


def forget_mentioned(conn: sqlite3.Connection, words: Collection[str]) -> int:
    """Forget every learned subject whose name (or, for a dunder or operator, its class's) is in words.

    Looked up from the words, not from the learned rows: a write costs index probes for the
    words its batch spells, where reading every learned row made each write cost as much as
    everything learned so far (issue 23, docs/benchmarks.md "Forgetting learned relations").
    """
    if not words or conn.execute("SELECT NOT EXISTS (SELECT 1 FROM learned)").fetchone()[0]:
        return 0
    named = [row[0] for row in conn.execute(_NAMED, (json.dumps(sorted(words)),))]
    members = conn.execute(_MEMBERS, (json.dumps(named),)).fetchall() if named else []
    candidates = named + [i for i, name, kind in members if called_without_name(name, kind)]
    gone = list(conn.execute(_LEARNED, (json.dumps(candidates),))) if candidates else []
    conn.executemany("DELETE FROM learned WHERE symbol_id = ?", gone)
    return len(gone)


# Three lookups, each driven by a list (a JSON array) through one index, so no plan can
# turn into reading every symbol or every learned row (with joins, SQLite's planner may
# read every symbol into a Bloom filter first, or walk `learned`):
# the symbols a word names (symbols_by_name is case-insensitive; the exact test follows),
_NAMED = (
    "SELECT s.id FROM json_each(?) w CROSS JOIN symbols s ON s.name = w.value COLLATE NOCASE WHERE s.name = w.value"
)
# the members of those (their dunders, constructors and operators are called without the name),
_MEMBERS = "SELECT id, name, kind FROM symbols WHERE parent_id IN (SELECT value FROM json_each(?))"
# and which of all these are learned.
_LEARNED = "SELECT symbol_id FROM learned WHERE symbol_id IN (SELECT value FROM json_each(?)) ORDER BY symbol_id"


def unlearned(
    conn: sqlite3.Connection, after_id: int, limit: int, languages: Collection[str] | None = None
) -> list[int]:
    """Up to `limit` ids above after_id, in id order, of symbols a search expands and nobody has learned.

    With `languages`, only symbols of files in those languages (one server's: the learner's lanes).
    """
    only = sorted(languages) if languages is not None else None
    in_files = (
        "" if only is None else f" AND s.file_id IN (SELECT id FROM files WHERE language IN ({_marks(len(only))}))"
    )
    rows = conn.execute(
        f"SELECT s.id FROM symbols s WHERE s.id > ? AND s.kind IN {_KINDS}{in_files}"
        " AND NOT EXISTS (SELECT 1 FROM learned l WHERE l.symbol_id = s.id) ORDER BY s.id LIMIT ?",
        (after_id, *(only or ()), limit),
    )
    return [r[0] for r in rows]


def counts(conn: sqlite3.Connection) -> tuple[int, int]:
    """(learned, learnable) symbols, as the count triggers keep them (`ensure_counts`)."""
    rows = dict(conn.execute("SELECT key, value FROM meta WHERE key IN (?, ?)", (_LEARNED_KEY, _LEARNABLE_KEY)))
    return int(rows[_LEARNED_KEY]), int(rows[_LEARNABLE_KEY])


def count_by_scan(conn: sqlite3.Connection) -> tuple[int, int]:
    """(learned, learnable) symbols counted from the rows: what the triggers must agree with."""
    learnable = conn.execute(f"SELECT count(*) FROM symbols WHERE kind IN {_KINDS}").fetchone()[0]
    learned = conn.execute(
        f"SELECT count(*) FROM learned l JOIN symbols s ON s.id = l.symbol_id WHERE s.kind IN {_KINDS}"
    ).fetchone()[0]
    return int(learned), int(learnable)


# `lensmux status` shows every root's (learned, learnable), and `lensmux index --wait` polls it:
# counted from the rows, each poll read every symbol (167 ms at 200k symbols, on the event
# loop). They are kept in `meta` instead, in the transaction that changes the rows: the
# store adds a written file's learnable symbols and subtracts a deleted file's
# (`file_counts`, through symbols_by_file); triggers on `learned` count what remember and
# forget change. A learned row that goes by the cascade of its symbol's delete is in the
# deleted file's `file_counts` (the symbol is already gone when the cascade runs, so the
# trigger finds no learnable symbol and counts nothing). Per-row triggers on `symbols`
# cost writing a quarter more CPU (docs/benchmarks.md, "Index counts on a write").
_LEARNED_KEY = "count_learned"
_LEARNABLE_KEY = "count_learnable"
_KINDS_KEY = "count_learned_kinds"
# What the counts were made for: the learnable kinds and how they are kept (2: triggers on `learned` only).
_COUNTED_AS = f"2 {_KINDS}"


def learnable(kind: str) -> bool:
    """Whether a symbol of this kind is one the learner learns (counted as learnable)."""
    return kind in CHUNKED_KINDS


def file_counts(conn: sqlite3.Connection, file_id: int) -> tuple[int, int]:
    """(learned, learnable) symbols of one file, read through symbols_by_file."""
    learnable_here = conn.execute(
        f"SELECT count(*) FROM symbols WHERE file_id = ? AND kind IN {_KINDS}", (file_id,)
    ).fetchone()[0]
    learned_here = conn.execute(
        "SELECT count(*) FROM symbols s JOIN learned l ON l.symbol_id = s.id"
        f" WHERE s.file_id = ? AND s.kind IN {_KINDS}",
        (file_id,),
    ).fetchone()[0]
    return int(learned_here), int(learnable_here)


def add_counts(conn: sqlite3.Connection, learned_delta: int, learnable_delta: int) -> None:
    """Apply a write's change to the kept counts (in its transaction)."""
    conn.executemany(
        "UPDATE meta SET value = CAST(value AS INTEGER) + ? WHERE key = ?",
        [(learned_delta, _LEARNED_KEY), (learnable_delta, _LEARNABLE_KEY)],
    )


def _count_triggers() -> str:
    update = "UPDATE meta SET value = CAST(value AS INTEGER) {sign} 1 WHERE key = '" + _LEARNED_KEY + "'"
    learnable_row = f"EXISTS (SELECT 1 FROM symbols WHERE id = {{row}}.symbol_id AND kind IN {_KINDS})"
    return f"""
CREATE TRIGGER learned_added AFTER INSERT ON learned WHEN {learnable_row.format(row="NEW")}
BEGIN {update.format(sign="+")}; END;
CREATE TRIGGER learned_removed AFTER DELETE ON learned WHEN {learnable_row.format(row="OLD")}
BEGIN {update.format(sign="-")}; END;
"""


def ensure_counts(conn: sqlite3.Connection) -> None:
    """Create the count triggers and count once, unless they exist for the current learnable kinds.

    Run on every open (after LEARNED_DDL): an index made before them, or when the kinds
    were others, is counted from its rows once, in the transaction that creates them.
    """
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (_KINDS_KEY,)).fetchone()
    if row is not None and row[0] == _COUNTED_AS:
        return
    drop = "".join(
        f"DROP TRIGGER IF EXISTS {name};\n"
        for name in ("learnable_added", "learnable_removed", "learned_added", "learned_removed")
    )
    count = f"""
INSERT OR REPLACE INTO meta(key, value) SELECT '{_LEARNABLE_KEY}', count(*) FROM symbols WHERE kind IN {_KINDS};
INSERT OR REPLACE INTO meta(key, value) SELECT '{_LEARNED_KEY}', count(*) FROM learned l
    JOIN symbols s ON s.id = l.symbol_id WHERE s.kind IN {_KINDS};
INSERT OR REPLACE INTO meta(key, value) VALUES ('{_KINDS_KEY}', '{_COUNTED_AS.replace("'", "''")}');
"""
    conn.executescript(f"BEGIN IMMEDIATE;\n{drop}{_count_triggers()}{count}COMMIT;")
