"""A write to the embedded store costs the rows it touches, not the size of the root (issue 23, item 4).

Every statement a write runs is planned by SQLite again with EXPLAIN QUERY PLAN: none may
scan a whole table (the counts used to be three count(*) over files, symbols and chunks
on every transaction, which made a full run quadratic). The counts kept incrementally
must still equal the rows.
"""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

from lensmux.graph.index.chunking import ChunkDraft, LspRange, ParsedSymbol
from lensmux.graph.index.records import FileWrite
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


def _whole_table_scans(store: Store, action: object) -> list[str]:
    """Run `action` and return every plan step of its statements that reads a whole table."""
    statements: list[str] = []
    writer: sqlite3.Connection = store._writer  # the statements a write runs are what is tested
    writer.set_trace_callback(statements.append)
    try:
        action()  # type: ignore[operator]
    finally:
        writer.set_trace_callback(None)
    probe = sqlite3.connect(store.path)
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
        scans = _whole_table_scans(store, lambda: store.remove_files(["src"], under=True))
        assert scans == []
        assert _rows(store) == (0, 0, 0)
        assert store.counts().files == 0
        store.write_files([_file(f"a/m{i}.py", 3) for i in range(5)], remove=["a/m0.py"])
        store.write_files([_file("a/m1.py", 1)], remove=["nothing/here.py"])
        store.remove_files(["a/m2.py"])
        counts = store.counts()
        assert (counts.files, counts.symbols, counts.chunks) == _rows(store) == (4, 10, 10)
    finally:
        store.close()
