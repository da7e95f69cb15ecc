"""An index written by schema 1 (the text twice) is converted in place to schema 2 (issue 23).

The schema 1 file is built here with schema 1's own DDL and the rows its store wrote, not
by the code under test. Keyword scores must be identical before and after (bm25() reads the
same postings and lengths), nothing may be lost, later deletes must leave the keyword index
consistent with its content view, and a kill in the middle of the conversion must leave a
file that is still schema 1 and converts on the next open.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

from lensmux.graph.index.builder.preparing.chunking import ChunkDraft
from lensmux.graph.index.builder.preparing.document_symbols import LspRange, ParsedSymbol
from lensmux.graph.index.identifiers import fts_document, fts_names
from lensmux.graph.index.records import FileWrite
from lensmux.graph.index.sqlite.chunk_text import register_functions
from lensmux.graph.index.sqlite.schema import BM25_WEIGHTS, LEARNED_DDL
from lensmux.graph.index.sqlite.store import Store

MODEL, DIM = "m", 4

# graph/index/sqlite/schema.py at SCHEMA_VERSION = 1 (main at 486ad4f), verbatim.
V1_DDL = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE files (
    id INTEGER PRIMARY KEY, path TEXT NOT NULL UNIQUE, language TEXT NOT NULL, sha256 TEXT NOT NULL,
    mtime_ns INTEGER NOT NULL, size INTEGER NOT NULL, structure TEXT NOT NULL, indexed_at REAL NOT NULL
);
CREATE TABLE symbols (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    file_id INTEGER NOT NULL REFERENCES files(id) ON DELETE CASCADE,
    parent_id INTEGER REFERENCES symbols(id) ON DELETE CASCADE,
    name TEXT NOT NULL, qualified_name TEXT NOT NULL, kind TEXT NOT NULL, detail TEXT, container TEXT,
    depth INTEGER NOT NULL, start_line INTEGER NOT NULL, start_char INTEGER NOT NULL,
    end_line INTEGER NOT NULL, end_char INTEGER NOT NULL, sel_start_line INTEGER NOT NULL,
    sel_start_char INTEGER NOT NULL, sel_end_line INTEGER NOT NULL, sel_end_char INTEGER NOT NULL
);
CREATE INDEX symbols_by_file ON symbols(file_id, start_line);
CREATE INDEX symbols_by_name ON symbols(name COLLATE NOCASE);
CREATE INDEX symbols_by_qualified_name ON symbols(qualified_name COLLATE NOCASE);
CREATE TABLE chunks (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    file_id INTEGER NOT NULL REFERENCES files(id) ON DELETE CASCADE,
    symbol_id INTEGER REFERENCES symbols(id) ON DELETE SET NULL,
    kind TEXT NOT NULL, name TEXT NOT NULL, start_line INTEGER NOT NULL, end_line INTEGER NOT NULL,
    text TEXT NOT NULL, tokens INTEGER NOT NULL
);
CREATE INDEX chunks_by_file ON chunks(file_id);
CREATE INDEX chunks_by_symbol ON chunks(symbol_id);
CREATE VIRTUAL TABLE chunks_fts USING fts5(
    names, path, body,
    tokenize = "unicode61 remove_diacritics 2 tokenchars '_'"
);
"""

_WORDS = ["parse", "header", "request", "HTTPHeaders", "send_body", "retry", "close", "uv_loop", "buffer", "é"]


def _chunk_text(f: int, c: int) -> str:
    words = [_WORDS[(f * 7 + c * 3 + i) % len(_WORDS)] for i in range(3 + (f + c) % 9)]
    return f"def fn_{f}_{c}(x):\n    # {' '.join(words)}\n    return {words[0]}(x)\n"


def _write_v1(db: Path, root: Path, files: int = 30, chunks: int = 5) -> None:
    """A schema 1 index as schema 1's store wrote it: text plain, and again in the FTS5 table."""
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.executescript("BEGIN;" + V1_DDL + LEARNED_DDL)
    meta = {"schema_version": "1", "model_id": MODEL, "dim": str(DIM), "root": str(root), "created_at": "0",
            "count_files": str(files), "count_symbols": str(files * chunks), "count_chunks": str(files * chunks),
            "vectors": json.dumps({"file": "vectors-0000000003.hnsw", "generation": 3, "sha256": "0" * 64,
                                   "size": 1, "dim": DIM, "count": 1})}  # fmt: skip
    conn.executemany("INSERT INTO meta VALUES (?, ?)", meta.items())
    for f in range(files):
        path = f"src/pkg_{f % 4}/mod_{f}.py"
        file_id = conn.execute(
            "INSERT INTO files(path, language, sha256, mtime_ns, size, structure, indexed_at)"
            " VALUES (?, 'python', ?, 1, 2, 'lsp', 3.0)",
            (path, f"{f:064x}"),
        ).lastrowid
        for c in range(chunks):
            # Every other chunk is a symbol's; the rest (module text) have no names.
            symbol_id = None
            name = f"fn_{f}_{c}"
            if c % 2 == 0:
                symbol_id = conn.execute(
                    "INSERT INTO symbols(file_id, parent_id, name, qualified_name, kind, detail, container,"
                    " depth, start_line, start_char, end_line, end_char, sel_start_line, sel_start_char,"
                    " sel_end_line, sel_end_char) VALUES (?, NULL, ?, ?, 'function', NULL, NULL, 0,"
                    " ?, 0, ?, 0, ?, 4, ?, 8)",
                    (file_id, name, f"pkg.{name}", c * 3, c * 3 + 2, c * 3, c * 3),
                ).lastrowid
            text = _chunk_text(f, c)
            chunk_id = conn.execute(
                "INSERT INTO chunks(file_id, symbol_id, kind, name, start_line, end_line, text, tokens)"
                " VALUES (?, ?, 'function', ?, ?, ?, ?, 9)",
                (file_id, symbol_id, name, c * 3, c * 3 + 2, text),
            ).lastrowid
            names = fts_names([name]) if symbol_id is not None else ""
            conn.execute(
                "INSERT INTO chunks_fts(rowid, names, path, body) VALUES (?, ?, ?, ?)",
                (chunk_id, names, fts_names([path]), fts_document(text)),
            )
    conn.execute("INSERT INTO learned(symbol_id, learned_at) SELECT id, 1.0 FROM symbols WHERE id % 3 = 0")
    conn.execute("COMMIT")
    conn.close()


_QUERIES = ['"parse"', '"header" OR "retry"', '"fn_3_2"', '"pkg_1"', '"http" OR "send"', '"é"', '"uv_loop" OR "x"']


def _v1_scores(db: Path) -> dict[str, list[tuple[int, float]]]:
    """Schema 1's keyword search (graph/index/sqlite/queries.py then), run on the raw file."""
    weights = ", ".join(str(w) for w in BM25_WEIGHTS)
    conn = sqlite3.connect(db)
    try:
        return {
            q: [
                (int(r[0]), -float(r[1]))
                for r in conn.execute(
                    f"SELECT rowid, bm25(chunks_fts, {weights}) AS rank FROM chunks_fts"
                    " WHERE chunks_fts MATCH ? ORDER BY rank LIMIT 200",
                    (q,),
                )
            ]
            for q in _QUERIES
        }
    finally:
        conn.close()


_V1_META = ("model_id", "dim", "root", "created_at", "count_files", "count_symbols", "count_chunks", "vectors")


def _raw(db: Path) -> dict[str, Any]:
    conn = sqlite3.connect(db)
    register_functions(conn)
    try:
        return {
            # Schema 1's keys (learned.ensure_counts adds its own on every open).
            "meta": dict(conn.execute("SELECT key, value FROM meta WHERE key IN (?, ?, ?, ?, ?, ?, ?, ?)", _V1_META)),
            "files": conn.execute("SELECT * FROM files ORDER BY id").fetchall(),
            "symbols": conn.execute("SELECT * FROM symbols ORDER BY id").fetchall(),
            "learned": conn.execute("SELECT * FROM learned ORDER BY symbol_id").fetchall(),
            "chunks": conn.execute(
                "SELECT id, file_id, symbol_id, kind, name, start_line, end_line,"
                " CASE typeof(text) WHEN 'blob' THEN lensmux_text(text) ELSE text END, tokens FROM chunks ORDER BY id"
            ).fetchall(),
            "sequence": conn.execute("SELECT * FROM sqlite_sequence ORDER BY name").fetchall(),
        }
    finally:
        conn.close()


def _schema_version(db: Path) -> str:
    conn = sqlite3.connect(db)
    try:
        return str(conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0])
    finally:
        conn.close()


def _check_keyword_index(store: Store) -> None:
    """FTS5's own check, with rank 1: the index against what its content view yields."""
    conn = sqlite3.connect(store.path)
    register_functions(conn)
    try:
        conn.execute("INSERT INTO chunks_fts(chunks_fts, rank) VALUES ('integrity-check', 1)")
        indexed = {r[0] for r in conn.execute("SELECT id FROM chunks_fts_docsize")}
        assert indexed == {r[0] for r in conn.execute("SELECT id FROM chunks")}
    finally:
        conn.close()


def _symbol(name: str, start: int, end: int) -> ParsedSymbol:
    return ParsedSymbol(
        name=name,
        qualified_name=f"pkg.{name}",
        kind="function",
        detail=None,
        range=LspRange(start, 0, end, 0),
        selection_range=LspRange(start, 4, start, 8),
        container=None,
        parent=None,
        depth=0,
    )


def _v1_root(tmp_path: Path) -> tuple[Path, Path]:
    """A root and its schema 1 index file."""
    root, state = tmp_path / "repo", tmp_path / "state"
    root.mkdir()
    state.mkdir()
    _write_v1(state / "index.sqlite", root.resolve())
    return root, state / "index.sqlite"


def _rewrite(path: str, text: str) -> FileWrite:
    symbol = _symbol("rewritten", 0, 2)
    chunks = [ChunkDraft(kind="function", name="rewritten", start_line=0, end_line=2, text=text, symbol=0)]
    return FileWrite(path, "python", "f" * 64, 5, 6, "lsp", [symbol], chunks, [7], frozenset())


def test_a_schema_1_index_converts_in_place_with_identical_keyword_scores(tmp_path: Path) -> None:
    root, db = _v1_root(tmp_path)
    state = db.parent
    before, rows = _v1_scores(db), _raw(db)
    assert all(before[q] for q in _QUERIES if q != '"http" OR "send"'), "the queries must find something"
    v1_size = db.stat().st_size

    store = Store.open(state, root, model_id=MODEL, dim=DIM)
    try:
        assert store.recovery_note is None
        assert _schema_version(db) == "2"
        assert {q: store.fts_search(q, 200) for q in _QUERIES} == before
        assert _raw(db) == rows, "every row, id, learned relation and the vector pointer stay"
        assert store.chunk(1) is not None and store.chunk(1).text == _chunk_text(0, 0)  # type: ignore[union-attr]
        assert store.chunk_texts([1, 2]) == [(1, _chunk_text(0, 0)), (2, _chunk_text(0, 1))]
        _check_keyword_index(store)
        # Deletes after the conversion tell FTS5 exactly what it indexed.
        store.write_files([_rewrite("src/pkg_1/mod_1.py", "def rewritten(): parse(header)\n")])
        store.remove_files(["src/pkg_2"], under=True)
        _check_keyword_index(store)
        hits = dict(store.keyword_search("rewritten", 5))
        assert [store.chunk(i).path for i in hits] == ["src/pkg_1/mod_1.py"]  # type: ignore[union-attr]
    finally:
        store.close()
    assert db.stat().st_size < v1_size, "the conversion gives the second copy's pages back"


def test_a_new_index_scores_like_a_schema_1_index_of_the_same_files(tmp_path: Path) -> None:
    """Written by the new store from the same rows, scores equal schema 1's (no conversion involved)."""
    root = tmp_path / "repo"
    root.mkdir()
    (tmp_path / "v1").mkdir()
    _write_v1(tmp_path / "v1" / "index.sqlite", root.resolve())
    before = _v1_scores(tmp_path / "v1" / "index.sqlite")
    rows = _raw(tmp_path / "v1" / "index.sqlite")
    store = Store.open(tmp_path / "v2", root, model_id=MODEL, dim=DIM)
    try:
        writes = []
        by_file: dict[int, list[tuple[Any, ...]]] = {}
        for chunk in rows["chunks"]:
            by_file.setdefault(chunk[1], []).append(chunk)
        for file_row in rows["files"]:
            chunks = by_file[file_row[0]]
            symbols: list[ParsedSymbol] = []
            drafts: list[ChunkDraft] = []
            for _, _, symbol_id, kind, name, start, end, text, _ in chunks:
                index = None
                if symbol_id is not None:
                    index = len(symbols)
                    symbols.append(_symbol(name, start, end))
                drafts.append(ChunkDraft(kind=kind, name=name, start_line=start, end_line=end, text=text, symbol=index))
            writes.append(FileWrite(file_row[1], "python", file_row[3], 1, 2, "lsp", symbols, drafts,
                                    [9] * len(drafts), frozenset()))  # fmt: skip
        store.write_files(writes)
        assert {q: store.fts_search(q, 200) for q in _QUERIES} == before
        _check_keyword_index(store)
    finally:
        store.close()


_KILL_MIDWAY = """
import os, signal, sqlite3, sys
from lensmux.graph.index.sqlite import chunk_text
from lensmux.graph.index.sqlite.migrate import migrate
calls = 0
def dying(blob):
    global calls
    calls += 1
    if calls == 40:  # inside the transaction, after the text of every chunk was packed
        os.kill(os.getpid(), signal.SIGKILL)
    return chunk_text._document(blob)
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
chunk_text.register_functions(conn)
conn.create_function("lensmux_fts_document", 1, dying, deterministic=True)
migrate(conn)
"""


def test_a_kill_in_the_middle_of_the_conversion_leaves_schema_1_which_converts_next_time(tmp_path: Path) -> None:
    root, db = _v1_root(tmp_path)
    state = db.parent
    before, rows = _v1_scores(db), _raw(db)
    proc = subprocess.run([sys.executable, "-c", _KILL_MIDWAY, str(db)], check=False, timeout=120)
    assert proc.returncode == -signal.SIGKILL
    assert _schema_version(db) == "1"
    assert _v1_scores(db) == before and _raw(db) == rows, "the killed conversion left no trace"
    assert os.path.exists(db)
    store = Store.open(state, root, model_id=MODEL, dim=DIM)
    try:
        assert store.recovery_note is None
        assert _schema_version(db) == "2"
        assert {q: store.fts_search(q, 200) for q in _QUERIES} == before
        assert _raw(db) == rows
        _check_keyword_index(store)
    finally:
        store.close()
