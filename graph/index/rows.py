"""The columns every store selects for its records, and the records built from those rows.

Both stores (graph/index/sqlite/queries.py, graph/index/postgres/contents/reader.py) name their tables
and columns alike, so one list and one constructor serve both.
"""

from __future__ import annotations

from typing import Any

from lensmux.graph.index.builder.preparing.document_symbols import LspRange
from lensmux.graph.index.records import SymbolRecord

# With the symbols table as `s` and files as `f`; chunks as `c`.
SYMBOL_COLUMNS = (
    "s.id, f.path, s.name, s.qualified_name, s.kind, s.detail, s.container, s.parent_id,"
    " s.depth, s.start_line, s.start_char, s.end_line, s.end_char,"
    " s.sel_start_line, s.sel_start_char, s.sel_end_line, s.sel_end_char"
)
CHUNK_COLUMNS = "c.id, f.path, f.language, c.symbol_id, c.kind, c.name, c.start_line, c.end_line, c.text, c.tokens"
FILE_COLUMNS = "id, path, language, sha256, mtime_ns, size, structure, indexed_at"


def symbol_from_row(row: tuple[Any, ...]) -> SymbolRecord:
    """A SymbolRecord from a row of SYMBOL_COLUMNS."""
    ints = [int(v) for v in row[9:17]]
    return SymbolRecord(
        id=int(row[0]),
        path=str(row[1]),
        name=str(row[2]),
        qualified_name=str(row[3]),
        kind=str(row[4]),
        detail=row[5] if isinstance(row[5], str) else None,
        container=row[6] if isinstance(row[6], str) else None,
        parent_id=int(row[7]) if isinstance(row[7], int) else None,
        depth=int(row[8]),
        range=LspRange(*ints[:4]),
        selection_range=LspRange(*ints[4:]),
    )


def like_escape(text: str) -> str:
    """text as a LIKE pattern matching itself (with ESCAPE '\\')."""
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
