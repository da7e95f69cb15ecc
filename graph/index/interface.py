"""The one interface of an index store: what search reads, what the indexer writes.

lensmux has one index interface and (by design) several stores behind it: the
embedded default, SQLite + hnswlib per root (graph/index/sqlite/), and a shared
store on a server engine for a team (issue 24). graph/search and daemon/search are
written against these protocols only, never against a store's own classes, so a
store is chosen in the configuration and nothing above graph/index changes.

The contract every store keeps (tests/graph/index/test_index_interface.py runs the same
assertions against each store):

- **Ids.** Chunk ids are ints, unique within one store and stable until the chunk's
  file is written again; a chunk id is also its vector's label. Symbol ids likewise.
  A reader that sees an id another read returned may find it gone (the file was
  rewritten since): every lookup by id skips or returns None, never raises.
- **Paths** are POSIX, relative to the store's root; `relative()` maps an absolute
  path under the root (or its resolved form) to that, and anything else to None.
- **Scores grow with relevance** in every list of (id, score): keyword scores are BM25
  over the store's columns (names, path, body) with the weights of
  graph/index/sqlite/schema.py `BM25_WEIGHTS`; vector scores are cosine similarity.
  A second store must rank like the embedded one (issue 24: within 0.01 MRR@10), so
  it computes BM25, not its engine's own rank function.
- **Keyword expressions** (`fts_search`) are built by graph/search/candidates/query_text.py and
  graph/index/identifiers.py only, in this grammar: terms joined by ` OR `, each a
  double-quoted lower-case word (`""` escapes a quote), optionally followed by `*` for
  a prefix match. This is FTS5's syntax restricted to what lensmux emits, so the
  embedded store passes it through and another store parses it with `keyword_terms`.
- **Generation.** `generation` grows with every write of files. Learned relations
  computed before a write are refused by `remember_learned` (they may be stale).
- **Reads see committed writes only**, and never block on a write in progress.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import numpy
import numpy.typing as npt

from lensmux.graph.index.identifiers import fts_match_query
from lensmux.graph.index.records import (
    ChunkRecord,
    FileRecord,
    FileStamp,
    FileWrite,
    IndexCounts,
    SymbolRecord,
    WriteResult,
)

__all__ = [
    "RELATIONS",
    "IndexReader",
    "IndexWriter",
    "KeywordTerm",
    "Learned",
    "VectorReader",
    "VectorWriter",
    "keyword_terms",
]

# subject -> other: the subject calls other (outgoing, or derived from definitions),
# other calls the subject, other references the subject (in its base list, for base_of).
RELATIONS = frozenset({"calls", "calls_derived", "called_by", "referenced_by", "base_of"})

# Learned relations of symbols: subject id -> [(relation, other id)], in the order stored.
Learned = dict[int, list[tuple[str, int]]]


def learned_symbols(relations: Mapping[int, Sequence[tuple[str, int]]]) -> set[int]:
    """Every symbol id learned relations name, subjects and others: what must still exist to store them."""
    return {i for subject, rel in relations.items() for i in (subject, *(other for _, other in rel))}


def storable_relations(
    relations: Mapping[int, Sequence[tuple[str, int]]], alive: Collection[int]
) -> Iterator[tuple[int, Sequence[tuple[str, int]]]]:
    """The subjects whose relations name only symbols that still exist (the others are skipped)."""
    for subject, rel in relations.items():
        if subject in alive and all(other in alive for _, other in rel):
            yield subject, rel


_TERM = re.compile(r'"((?:[^"]|"")*)"(\*?)')


@dataclass(frozen=True, slots=True)
class KeywordTerm:
    """One term of a keyword expression: a word, or a prefix when `prefix`."""

    text: str
    prefix: bool = False


def keyword_terms(expression: str) -> list[KeywordTerm]:
    """The terms of a keyword expression (the grammar above), in order, duplicates dropped."""
    seen: dict[KeywordTerm, None] = {}
    for match in _TERM.finditer(expression):
        seen.setdefault(KeywordTerm(match.group(1).replace('""', '"'), bool(match.group(2))), None)
    return list(seen)


def free_text_search(
    fts_search: Callable[[str, int], list[tuple[int, float]]], query: str, k: int
) -> list[tuple[int, float]]:
    """`keyword_search` as every store answers it: its fts_search of the query's words and their parts."""
    match = fts_match_query(query)
    return [] if match is None else fts_search(match, k)


class IndexReader(Protocol):
    """One root's index as search reads it (and the call graph search learns into it)."""

    @property
    def root(self) -> Path:
        """The root the store's relative paths are relative to."""
        ...

    @property
    def generation(self) -> int:
        """Grows with every write of files."""
        ...

    def relative(self, path: str | Path) -> str | None:
        """The POSIX path relative to the root, or None when path is outside it."""
        ...

    def fts_search(self, match: str, k: int = 20) -> list[tuple[int, float]]:
        """BM25 of chunks for a keyword expression: (chunk id, score), best first, at most k."""
        ...

    def keyword_search(self, query: str, k: int = 20) -> list[tuple[int, float]]:
        """fts_search for free text (its words and their identifier parts OR-ed)."""
        ...

    def lookup_symbols(self, name: str, limit: int = 50) -> list[SymbolRecord]:
        """Symbols named name: exact, then case-insensitive, then qualified-suffix matches."""
        ...

    def files_matching(self, path_fragment: str, limit: int = 50) -> list[FileRecord]:
        """Indexed files whose path contains the fragment (case-insensitive); exact names first."""
        ...

    def file(self, path: str | Path) -> FileRecord | None:
        """One indexed file."""
        ...

    def chunk(self, chunk_id: int) -> ChunkRecord | None:
        """One chunk by id."""
        ...

    def chunks(self, chunk_ids: Iterable[int]) -> list[ChunkRecord]:
        """Several chunks in the order asked; ids that no longer exist are skipped."""
        ...

    def chunks_in_file(self, path: str | Path) -> list[ChunkRecord]:
        """A file's chunks in line order."""
        ...

    def chunks_for_symbol(self, symbol_id: int) -> list[ChunkRecord]:
        """The chunk(s) made from one symbol."""
        ...

    def symbol(self, symbol_id: int) -> SymbolRecord | None:
        """One symbol by id."""
        ...

    def symbols_in_file(self, path: str | Path) -> list[SymbolRecord]:
        """A file's symbols in document order (parents before children)."""
        ...

    def enclosing_symbol(
        self, path: str | Path, line: int, kinds: Collection[str] | None = None
    ) -> SymbolRecord | None:
        """The innermost symbol whose range holds the 0-based line, optionally of given kinds."""
        ...

    def recall_learned(self, symbol_ids: Iterable[int]) -> Learned:
        """The stored relations of those symbols that are learned."""
        ...

    def remember_learned(self, relations: Mapping[int, Sequence[tuple[str, int]]], generation: int) -> int:
        """Store learned relations unless a file was written since `generation`; returns subjects stored."""
        ...

    def unlearned_symbols(self, after_id: int, limit: int, languages: Collection[str] | None = None) -> list[int]:
        """Symbols a search expands whose relations are not learned yet, in id order (of files in `languages`)."""
        ...

    def learned_counts(self) -> tuple[int, int]:
        """(learned, learnable) symbols."""
        ...


class VectorReader(Protocol):
    """Nearest chunks to a query vector."""

    def __len__(self) -> int:
        """How many vectors are searchable."""
        ...

    def search(self, vector: npt.NDArray[numpy.float32], k: int, ef: int | None = None) -> list[tuple[int, float]]:
        """(chunk id, cosine similarity), best first, at most k."""
        ...


class IndexWriter(IndexReader, Protocol):
    """What the indexer (or a publisher) writes: whole files at a time, in one transaction each call."""

    def counts(self) -> IndexCounts:
        """Files, symbols and chunks as of the last commit."""
        ...

    def file_stamps(self) -> dict[str, FileStamp]:
        """Every indexed file's hash, mtime, size and structure source."""
        ...

    def chunk_ids(self) -> set[int]:
        """Every chunk id (= every vector label that should exist)."""
        ...

    def chunk_texts(self, ids: Iterable[int]) -> list[tuple[int, str]]:
        """(id, text) of those chunks that still exist, in id order."""
        ...

    def chunk_ids_by_text(self, paths: Collection[str]) -> dict[str, int]:
        """For the given files, chunk text -> an existing chunk id (to reuse its vector)."""
        ...

    def write_files(
        self,
        files: Sequence[FileWrite],
        *,
        remove: Sequence[str] = (),
        touch: Sequence[tuple[str, int, int]] = (),
    ) -> WriteResult:
        """Replace files' rows, delete `remove`, set (mtime_ns, size) of `touch`; bumps `generation`."""
        ...

    def remove_files(self, paths: Iterable[str], *, under: bool = False) -> list[int]:
        """Delete files (with under=True every file below each path too); returns their chunk ids."""
        ...


class VectorWriter(VectorReader, Protocol):
    """Vectors labelled by chunk id: the indexer adds them after the rows they belong to are written."""

    def __contains__(self, label: object) -> bool:
        """Whether a vector is stored under label."""
        ...

    def add(self, labels: Iterable[int], vectors: npt.NDArray[numpy.float32]) -> None:
        """Insert (or replace) vectors under the given labels."""
        ...

    def remove(self, labels: Iterable[int]) -> int:
        """Forget labels; unknown ones are ignored. Returns how many were stored."""
        ...

    def vectors(self, labels: Iterable[int]) -> dict[int, npt.NDArray[numpy.float32]]:
        """Stored (normalised) vectors of the labels among those given."""
        ...
