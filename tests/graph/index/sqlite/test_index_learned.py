"""learned.forget_mentioned looks learned symbols up by the words a write spells, with the old answers."""

from __future__ import annotations

import random
import sqlite3
from collections.abc import Collection

from lensmux.graph.index.identifiers import called_without_name
from lensmux.graph.index.sqlite import learned
from lensmux.graph.index.sqlite.schema import DDL, LEARNED_DDL

# Names that differ only in case (the name index is case-insensitive, the rule is not),
# dunders of every length the old test `startswith("__") and endswith("__")` accepts or not.
NAMES = ["Foo", "foo", "FOO", "Bar", "bar", "baz", "Qux", "__init__", "__add__", "__", "___", "__x", "x__", "run"]
KINDS = ["class", "method", "function", "constructor", "operator", "field", "variable"]


def forget_mentioned_before(conn: sqlite3.Connection, words: Collection[str]) -> int:
    """The implementation before issue 23, kept as the reference: every learned row read per write."""
    if not words:
        return 0
    rows = conn.execute(
        "SELECT l.symbol_id, s.name, s.kind, p.name FROM learned l JOIN symbols s ON s.id = l.symbol_id"
        " LEFT JOIN symbols p ON p.id = s.parent_id"
    ).fetchall()
    gone = [
        (subject,)
        for subject, name, kind, parent in rows
        if name in words or (parent is not None and called_without_name(name, kind) and parent in words)
    ]
    conn.executemany("DELETE FROM learned WHERE symbol_id = ?", gone)
    return len(gone)


def _sample(seed: int, symbols: int = 400) -> sqlite3.Connection:
    rng = random.Random(seed)
    conn = sqlite3.connect(":memory:", isolation_level=None)
    conn.execute("PRAGMA foreign_keys = ON")
    conn.executescript(DDL)
    conn.executescript(LEARNED_DDL)
    conn.execute(
        "INSERT INTO files(id, path, language, sha256, mtime_ns, size, structure, indexed_at)"
        " VALUES (1, 'a.py', 'python', '', 0, 0, 'lsp', 0)"
    )
    ids: list[int] = []
    for i in range(symbols):
        parent = rng.choice(ids) if ids and rng.random() < 0.6 else None
        name, kind = rng.choice(NAMES), rng.choice(KINDS)
        conn.execute(
            "INSERT INTO symbols(id, file_id, parent_id, name, qualified_name, kind, depth, start_line, start_char,"
            " end_line, end_char, sel_start_line, sel_start_char, sel_end_line, sel_end_char)"
            " VALUES (?, 1, ?, ?, ?, ?, 0, 0, 0, 0, 0, 0, 0, 0, 0)",
            (i + 1, parent, name, name, kind),
        )
        ids.append(i + 1)
        if rng.random() < 0.7:
            conn.execute("INSERT INTO learned(symbol_id, learned_at) VALUES (?, 0)", (i + 1,))
    return conn


def _copy(conn: sqlite3.Connection) -> sqlite3.Connection:
    twin = sqlite3.connect(":memory:", isolation_level=None)
    conn.backup(twin)
    twin.execute("PRAGMA foreign_keys = ON")
    return twin


def _learned(conn: sqlite3.Connection) -> list[int]:
    return [r[0] for r in conn.execute("SELECT symbol_id FROM learned ORDER BY symbol_id")]


def test_forgets_exactly_what_reading_every_learned_row_forgot() -> None:
    checked = 0
    for seed in range(40):
        base = _sample(seed)
        rng = random.Random(1000 + seed)
        vocabulary = [*NAMES, "unrelated", "foO", "init", "_"]
        for words in ([], rng.sample(vocabulary, 1), rng.sample(vocabulary, 4), rng.sample(vocabulary, 9)):
            before, after = _copy(base), _copy(base)
            assert learned.forget_mentioned(after, frozenset(words)) == forget_mentioned_before(before, set(words))
            assert _learned(after) == _learned(before)
            checked += len(_learned(base)) - len(_learned(after))
    assert checked > 1000, "the sample must make both rules forget something"


def test_nothing_learned_reads_nothing_and_forgets_nothing() -> None:
    conn = _sample(0)
    conn.execute("DELETE FROM learned")
    assert learned.forget_mentioned(conn, frozenset(NAMES)) == 0


def test_the_lookups_go_through_the_indexes_not_every_symbol_or_learned_row() -> None:
    conn = _sample(1, symbols=2000)
    conn.execute("ANALYZE")  # statistics must not turn a plan around either
    plans = {
        sql: [r[3] for r in conn.execute("EXPLAIN QUERY PLAN " + sql, ("[]",))]
        for sql in (learned._NAMED, learned._MEMBERS, learned._LEARNED)
    }
    assert any("symbols_by_name" in step for step in plans[learned._NAMED]), plans
    assert any("symbols_by_parent" in step for step in plans[learned._MEMBERS]), plans
    assert any("SEARCH learned USING INTEGER PRIMARY KEY" in step for step in plans[learned._LEARNED]), plans
    for plan in plans.values():
        assert not any(step.startswith("SCAN") and "json_each" not in step and "VIRTUAL" not in step for step in plan)
