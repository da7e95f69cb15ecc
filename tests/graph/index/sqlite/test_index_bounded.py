"""A write to the embedded store, and its counts, cost the rows they touch, not the size of the root (issue 23, item 4).

Every statement a write runs is planned by SQLite again with EXPLAIN QUERY PLAN: none may
scan a whole table (the counts used to be three count(*) over files, symbols and chunks
on every transaction, which made a full run quadratic). The counts kept incrementally
must still equal the rows.
"""

from __future__ import annotations

import random
import re
import sqlite3
from pathlib import Path

from lensmux.graph.index.builder.preparing.chunking import ChunkDraft
from lensmux.graph.index.builder.preparing.document_symbols import LspRange, ParsedSymbol
from lensmux.graph.index.records import FileWrite
from lensmux.graph.index.sqlite import learned
from lensmux.graph.index.sqlite.chunk_text import register_functions
from lensmux.graph.index.sqlite.store import Store


def _file(path: str, n: int) -> FileWrite:
    symbols = [
        ParsedSymbol(
            name=f"f{i}",
            qualified_name=f"f{i}",
            kind="function",
            detail=None,
            container=None,
            depth=0,
            parent=None,
            range=LspRange(i * 3, 0, i * 3 + 2, 0),
            selection_range=LspRange(i * 3, 4, i * 3, 6),
        )
        for i in range(n)
    ]
    chunks = [
        ChunkDraft(
            kind="function", name=f"f{i}", start_line=i * 3, end_line=i * 3 + 2, text=f"def f{i}(): {path}", symbol=i
        )
        for i in range(n)
    ]
    return FileWrite(path, "python", "0" * 64, 1, 10, "lsp", symbols, chunks, [5] * n, frozenset({"f1"}))


def _rows(store: Store) -> tuple[int, int, int]:
    conn = sqlite3.connect(store.path)
    try:
        files, symbols, chunks = (
            conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in ("files", "symbols", "chunks")
        )
        return files, symbols, chunks
    finally:
        conn.close()


# "Is the table empty?": reads one row at most, whatever the plan calls it.
_EMPTINESS_PROBE = re.compile(r"EXISTS \(SELECT 1 FROM \w+\)\)?$")


def _whole_table_scans(store: Store, action: object, *, reads: bool = False) -> list[str]:
    """Run `action` and return every plan step of its statements (writes, or reads) that reads a whole table."""
    statements: list[str] = []
    # The statements the store runs are what is tested.
    conn: sqlite3.Connection = store._reader if reads else store._writer
    conn.set_trace_callback(statements.append)
    try:
        action()  # type: ignore[operator]
    finally:
        conn.set_trace_callback(None)
    probe = sqlite3.connect(store.path)
    register_functions(probe)  # the keyword index's view calls them
    scans = []
    try:
        for sql in statements:
            if not sql.lstrip().upper().startswith(("SELECT", "UPDATE", "DELETE", "INSERT")):
                continue
            if _EMPTINESS_PROBE.search(sql.strip()):
                continue
            for row in probe.execute("EXPLAIN QUERY PLAN " + sql):
                detail = str(row[-1])
                # A virtual table (FTS5, json_each) is "SCAN x VIRTUAL TABLE INDEX n:..." even for a lookup.
                if detail.startswith("SCAN ") and "VIRTUAL TABLE" not in detail and detail != "SCAN CONSTANT ROW":
                    scans.append(f"{detail}  <-  {sql[:120]}")
    finally:
        probe.close()
    return scans


def test_a_write_reads_no_whole_table_and_keeps_the_counts(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    store = Store.open(tmp_path / "state", root, model_id="m", dim=4)
    try:
        store.write_files([_file(f"src/m{i}.py", 4) for i in range(50)])
        scans = _whole_table_scans(store, lambda: store.write_files([_file("src/m1.py", 6), _file("src/new.py", 2)]))
        assert scans == []
        # Paths beside the directory, not below it: a range over the path index must leave them.
        beside = ["src.py", "src0/x.py", "src-old/y.py", "srcs/z.py", "sr/c.py"]
        store.write_files([_file(path, 1) for path in beside])
        scans = _whole_table_scans(store, lambda: store.remove_files(["src"], under=True))
        assert scans == []
        assert sorted(store.file_stamps()) == sorted(beside)
        store.remove_files(beside)
        assert _rows(store) == (0, 0, 0)
        assert store.counts().files == 0
        store.write_files([_file(f"a/m{i}.py", 3) for i in range(5)], remove=["a/m0.py"])
        store.write_files([_file("a/m1.py", 1)], remove=["nothing/here.py"])
        store.remove_files(["a/m2.py"])
        counts = store.counts()
        assert (counts.files, counts.symbols, counts.chunks) == _rows(store) == (4, 10, 10)
    finally:
        store.close()


def _symbols_file(path: str, n: int, mentions: frozenset[str] = frozenset()) -> FileWrite:
    """A class with n-1 methods and a variable: learnable and unlearnable kinds side by side."""
    kinds = ["class", *["method"] * (n - 1), "variable"]
    symbols = [
        ParsedSymbol(
            name=f"{path.replace('/', '_').removesuffix('.py')}_{i}",
            qualified_name=f"q{i}",
            kind=kind,
            detail=None,
            container=None,
            depth=0 if i == 0 else 1,
            parent=None if i == 0 else 0,
            range=LspRange(i * 3, 0, i * 3 + 2, 0),
            selection_range=LspRange(i * 3, 4, i * 3, 6),
        )
        for i, kind in enumerate(kinds)
    ]
    return FileWrite(path, "python", "0" * 64, 1, 10, "lsp", symbols, [], [], mentions)


def test_the_learned_counts_are_kept_without_reading_every_symbol(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    store = Store.open(tmp_path / "state", root, model_id="m", dim=4)
    rng = random.Random(7)
    try:
        for i in range(12):
            store.write_files([_symbols_file(f"m{i}.py", 4)])
        for step in range(60):
            ids = [s.id for i in range(12) for s in store.symbols_in_file(f"m{i}.py")]
            action = rng.randrange(4)
            if action == 0 and ids:
                # Learn some symbols (variables among them), some again (an upsert).
                subjects = rng.sample(ids, min(len(ids), 8))
                store.remember_learned({s: [("calls", rng.choice(ids))] for s in subjects}, store.generation)
            elif action == 1:
                # Rewrite a file: its symbols (and what they learned) go by cascade.
                store.write_files([_symbols_file(f"m{rng.randrange(12)}.py", rng.randrange(1, 6))])
            elif action == 2:
                # A file naming another's class forgets what that class learned.
                named = frozenset({f"m{rng.randrange(12)}_0"})
                store.write_files([_symbols_file(f"x{step}.py", 2, named)])
            else:
                store.remove_files([f"m{rng.randrange(12)}.py", f"x{rng.randrange(step + 1)}.py"])
                store.write_files([_symbols_file(f"m{rng.randrange(12)}.py", 3)])
            with store._read() as conn:  # the same snapshot for both
                assert learned.counts(conn) == learned.count_by_scan(conn), f"step {step}"
        learned_now, learnable_now = store.learned_counts()
        assert learned_now > 0 and learnable_now > learned_now
    finally:
        store.close()
    # An index from before the triggers (or with other learnable kinds) is counted once on open.
    conn = sqlite3.connect(tmp_path / "state" / "index.sqlite")
    conn.execute("DELETE FROM meta WHERE key LIKE 'count_learn%'")
    conn.execute("DROP TRIGGER learned_added")
    conn.commit()
    conn.close()
    store = Store.open(tmp_path / "state", root, model_id="m", dim=4)
    try:
        assert store.learned_counts() == (learned_now, learnable_now)
        # What `lensmux status` asks of every root, each time it is polled.
        assert _whole_table_scans(store, store.learned_counts, reads=True) == []
        scans = _whole_table_scans(store, lambda: store.write_files([_symbols_file("m1.py", 5)]))
        assert scans == []
    finally:
        store.close()
