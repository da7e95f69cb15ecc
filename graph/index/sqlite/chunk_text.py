"""Chunk text as the SQLite index stores it, and the SQL functions that read it back.

A chunk's text is kept once, as a raw DEFLATE stream of its UTF-8 (zlib, level 9, no
header or checksum: SQLite's page checksums and `quick_check` guard the file), about 47%
of the text's size on C and Python (docs/benchmarks.md, "Monorepo"). The FTS5 table has no
copy of its own: its external content is the view `chunks_fts_source`, which derives the
three indexed columns from the chunk and file rows with the functions registered here.

Architecture Invariant: what the view yields for a chunk is exactly what was inserted into
chunks_fts for it (store.write_files), since an FTS5 'delete' given other values corrupts
the index. So every function here is deterministic, and a change to them, or to
graph/index/identifiers.py's terms, needs a SCHEMA_VERSION bump (the index is rebuilt).
"""

from __future__ import annotations

import sqlite3
import zlib

from lensmux.graph.index.identifiers import fts_document, fts_names

_WBITS = -15  # raw DEFLATE


def pack(text: str) -> bytes:
    """The stored form of a chunk's text."""
    compressor = zlib.compressobj(9, zlib.DEFLATED, _WBITS)
    return compressor.compress(text.encode("utf-8")) + compressor.flush()


def unpack(blob: bytes) -> str:
    """The text a stored chunk was packed from."""
    return zlib.decompress(blob, _WBITS).decode("utf-8")


def _names(value: str | None) -> str:
    return fts_names([value]) if value else ""


def _document(blob: bytes) -> str:
    return fts_document(unpack(blob))


def register_functions(conn: sqlite3.Connection) -> None:
    """Register on every connection to an index (the view and the queries call these)."""
    conn.create_function("lensmux_text", 1, unpack, deterministic=True)
    conn.create_function("lensmux_pack", 1, pack, deterministic=True)
    conn.create_function("lensmux_fts_names", 1, _names, deterministic=True)
    conn.create_function("lensmux_fts_document", 1, _document, deterministic=True)
