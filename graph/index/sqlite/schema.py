"""SQLite schema of a root's index; bump SCHEMA_VERSION on any change.

An index of another version is rebuilt, except one of version 1, which migrate.py converts
in place. LEARNED_DDL is the other exception: tables and indexes added later, created if
missing on every open, so an existing index gains them without a rebuild.
"""

from __future__ import annotations

SCHEMA_VERSION = 2

# Chunk and symbol ids use AUTOINCREMENT so a committed id is never handed out again:
# a vector labelled with a chunk id can then only ever describe that one chunk, which
# is what makes reconciling an older vector file with the database safe.
DDL = """
CREATE TABLE meta (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE files (
    id INTEGER PRIMARY KEY,
    path TEXT NOT NULL UNIQUE,
    language TEXT NOT NULL,
    sha256 TEXT NOT NULL,
    mtime_ns INTEGER NOT NULL,
    size INTEGER NOT NULL,
    structure TEXT NOT NULL,
    indexed_at REAL NOT NULL
);
CREATE TABLE symbols (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    file_id INTEGER NOT NULL REFERENCES files(id) ON DELETE CASCADE,
    parent_id INTEGER REFERENCES symbols(id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    qualified_name TEXT NOT NULL,
    kind TEXT NOT NULL,
    detail TEXT,
    container TEXT,
    depth INTEGER NOT NULL,
    start_line INTEGER NOT NULL,
    start_char INTEGER NOT NULL,
    end_line INTEGER NOT NULL,
    end_char INTEGER NOT NULL,
    sel_start_line INTEGER NOT NULL,
    sel_start_char INTEGER NOT NULL,
    sel_end_line INTEGER NOT NULL,
    sel_end_char INTEGER NOT NULL
);
CREATE INDEX symbols_by_file ON symbols(file_id, start_line);
CREATE INDEX symbols_by_name ON symbols(name COLLATE NOCASE);
CREATE INDEX symbols_by_qualified_name ON symbols(qualified_name COLLATE NOCASE);
CREATE TABLE chunks (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    file_id INTEGER NOT NULL REFERENCES files(id) ON DELETE CASCADE,
    symbol_id INTEGER REFERENCES symbols(id) ON DELETE SET NULL,
    kind TEXT NOT NULL,
    name TEXT NOT NULL,
    start_line INTEGER NOT NULL,
    end_line INTEGER NOT NULL,
    text BLOB NOT NULL,  -- chunk_text.pack(): raw DEFLATE of the UTF-8
    tokens INTEGER NOT NULL
);
CREATE INDEX chunks_by_file ON chunks(file_id);
CREATE INDEX chunks_by_symbol ON chunks(symbol_id);"""

# The keyword index, without a copy of the text (chunk_text.py): rowid = chunks.id, and its
# columns hold words already split by lensmux.graph.index.identifiers ('_' is a token
# character so identifiers also stay whole). A chunk's names are its own name's words when
# it was made from a symbol, else empty; its path is its file's path's words.
# External content: FTS5 reads the view only for column values (never for bm25(), whose
# lengths are in chunks_fts_docsize), and its rows are deleted with the 'delete' command
# and the view's values (store._delete_file), before the chunk rows go.
FTS_DDL = """
CREATE VIEW chunks_fts_source AS
SELECT c.id AS id, c.file_id AS file_id,
       CASE WHEN c.symbol_id IS NULL THEN '' ELSE lensmux_fts_names(c.name) END AS names,
       lensmux_fts_names(f.path) AS path,
       lensmux_fts_document(c.text) AS body
FROM chunks c JOIN files f ON f.id = c.file_id;
CREATE VIRTUAL TABLE chunks_fts USING fts5(
    names, path, body,
    content = 'chunks_fts_source', content_rowid = 'id',
    tokenize = "unicode61 remove_diacritics 2 tokenchars '_'"
);
"""
DDL += FTS_DDL

# The call graph the search learned from the language servers (graph/index/sqlite/learned.py).
# A `learned` row says: every relation of this symbol is in `learned_edges`. Both sides
# are symbol ids, which a file's rewrite replaces, so the rows go with the symbols.
LEARNED_DDL = """
CREATE TABLE IF NOT EXISTS learned (
    symbol_id INTEGER PRIMARY KEY REFERENCES symbols(id) ON DELETE CASCADE,
    learned_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS learned_edges (
    subject_id INTEGER NOT NULL REFERENCES learned(symbol_id) ON DELETE CASCADE,
    relation TEXT NOT NULL,
    other_id INTEGER NOT NULL REFERENCES symbols(id) ON DELETE CASCADE,
    rank INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS learned_edges_by_subject ON learned_edges(subject_id, rank);
CREATE INDEX IF NOT EXISTS learned_edges_by_other ON learned_edges(other_id);
-- The members of a class: forgetting its dunders and constructors when a file names the
-- class (learned.forget_mentioned), and the ON DELETE CASCADE of parent_id, which
-- otherwise scans every symbol of the root for each symbol a file write deletes.
CREATE INDEX IF NOT EXISTS symbols_by_parent ON symbols(parent_id);
"""

# bm25() weights for (names, path, body): a hit on a chunk's own name counts most.
BM25_WEIGHTS = (10.0, 2.0, 1.0)

META_SCHEMA_VERSION = "schema_version"
META_MODEL_ID = "model_id"
META_DIM = "dim"
META_ROOT = "root"
META_CREATED_AT = "created_at"
META_FILES = "count_files"
META_SYMBOLS = "count_symbols"
META_CHUNKS = "count_chunks"
META_VECTORS = "vectors"  # JSON of a VectorPointer, absent until the first save
# Chunks deleted from the FTS5 index since it was last rewritten whole (Store.optimize_keywords).
META_FTS_DELETED = "fts_deleted"
