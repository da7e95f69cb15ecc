"""The index of one parent commit, read in process while the daemon keeps running.

The daemon holds its index directory locked, so after each `lensmux index --wait`
the benchmark copies it: the database through SQLite's backup API (a consistent
copy even while the daemon writes learned relations) and the vector file it names.
Over that copy it ranks the single strategies (vector-only, lensmux's own keyword
search), lists the index's function definitions (the BM25 baseline's C/C++
documents, the same clangd symbols the answers were mined from) and checks which
answers the index holds at all.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import sqlite3
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from bench.search.offline import OfflineIndex
from lensmux.graph.embedding.embedder import Embedder
from lensmux.graph.index.builder.preparing.document_symbols import CALLABLE_KINDS
from lensmux.graph.index.sqlite.schema import META_VECTORS
from lensmux.graph.search.candidates.seeds import keyword_expression
from lensmux.graph.search.catalog import Catalog, Node

__all__ = ["DB_NAME", "SnapshotFailed", "SnapshotIndex", "snapshot"]

DB_NAME = "index.sqlite"
# Chunks asked of a single source: enough that 20 distinct symbols survive collapsing.
CHUNKS = 150

Ranked = list[tuple[str, int]]


class SnapshotFailed(Exception):
    """The daemon's index could not be copied."""


def snapshot(store_dir: Path, dest: Path) -> None:
    """Copy the live index (database and current vector file) to `dest`, replacing what was there."""
    shutil.rmtree(dest, ignore_errors=True)
    dest.mkdir(parents=True)
    for _attempt in range(3):
        source = sqlite3.connect(f"file:{store_dir / DB_NAME}?mode=ro", uri=True, timeout=30)
        target = sqlite3.connect(dest / DB_NAME)
        try:
            source.backup(target)
            row = target.execute("SELECT value FROM meta WHERE key = ?", (META_VECTORS,)).fetchone()
        finally:
            source.close()
            target.close()
        if row is None:
            raise SnapshotFailed(f"{store_dir}: the index has no vector file yet")
        name = str(json.loads(row[0])["file"])
        try:
            shutil.copy2(store_dir / name, dest / name)
            return
        except FileNotFoundError:
            (dest / DB_NAME).unlink()  # a newer vector generation replaced it meanwhile: copy again
    raise SnapshotFailed(f"{store_dir}: the vector file kept changing while it was copied")


class SnapshotIndex:
    """A copy of the index opened in process."""

    def __init__(self, directory: Path, root: Path, embedder: Embedder) -> None:
        self.root = root
        self.offline = OfflineIndex(directory, root, embedder)

    def close(self) -> None:
        """Close the copy."""
        self.offline.close()

    def _symbols(self, nodes: Iterable[tuple[int, Node]], depth: int) -> Ranked:
        seen: dict[str, tuple[str, int]] = {}
        for _, node in nodes:
            seen.setdefault(node.key, (node.path, node.range.start_line))
            if len(seen) == depth:
                break
        return list(seen.values())

    def vector(self, query: str, depth: int) -> Ranked:
        """Vector-only: the query's embedding through the index's hnswlib file, chunks collapsed to symbols."""
        found = self.offline.vectors.search(self.offline.embedder.embed_query(query), CHUNKS)
        return self._symbols(Catalog(self.offline.store, self.root).nodes_of_chunks(c for c, _ in found), depth)

    def keyword(self, query: str, depth: int) -> Ranked:
        """lensmux's own keyword search alone (the FTS5 expression stage 1 issues)."""
        expression = keyword_expression(query)
        if expression is None:
            return []
        hits = self.offline.store.fts_search(expression, CHUNKS)
        return self._symbols(Catalog(self.offline.store, self.root).nodes_of_chunks(c for c, _ in hits), depth)

    def _rows(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        path = self.offline.store.directory / DB_NAME
        with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as conn:
            return list(conn.execute(sql, params))

    def files(self) -> dict[str, str]:
        """Every indexed file and its language."""
        return {str(path): str(language) for path, language in self._rows("SELECT path, language FROM files")}

    def callables(self, languages: Iterable[str]) -> list[tuple[str, int, int]]:
        """(path, first line, last line) of every outermost function or method of files in those languages."""
        kinds = sorted(CALLABLE_KINDS)
        langs = sorted(languages)
        rows = self._rows(
            "SELECT s.id, s.parent_id, s.kind, f.path, s.start_line, s.end_line, s.end_char FROM symbols s"
            f" JOIN files f ON f.id = s.file_id WHERE f.language IN ({','.join('?' * len(langs))})",
            langs,
        )
        kind_of = {row[0]: (row[1], row[2]) for row in rows}

        def inside_callable(parent: int | None) -> bool:
            while parent is not None and parent in kind_of:
                up, kind = kind_of[parent]
                if kind in kinds:
                    return True
                parent = up
            return False

        out = []
        for _, parent, kind, path, start, end, end_char in rows:
            if kind in kinds and not inside_callable(parent):
                out.append((str(path), int(start), int(end) - 1 if end_char == 0 and end > start else int(end)))
        return sorted(out)

    def symbol_starts(self, paths: Iterable[str]) -> dict[str, set[int]]:
        """The start lines of the indexed symbols of each of `paths`."""
        wanted = sorted(set(paths))
        out: dict[str, set[int]] = {p: set() for p in wanted}
        if wanted:
            rows = self._rows(
                "SELECT f.path, s.start_line FROM symbols s JOIN files f ON f.id = s.file_id"
                f" WHERE f.path IN ({','.join('?' * len(wanted))})",
                wanted,
            )
            for path, start in rows:
                out[str(path)].add(int(start))
        return out
