"""One root's index read as a shared snapshot with this working tree's changes laid over it (issue 24).

The shared part is a team's published index of an ancestor commit; the local part indexes
only the files whose content differs from it (graph/index/team/baseline.py). Every file answers
from exactly one side: a file the local side holds, or that this tree no longer has, is
*masked* in the shared one, so a file changed locally never shows its stale shared rows.

Ids of the two sides are kept apart: local ids as they are, shared ids shifted by
SHARED_ID_BASE (records are rewritten on the way out), so an id always says which side it
came from. Keyword scores from both sides are BM25 over each side's own statistics, merged
by score; with few local files the shared side's statistics dominate, as they would in one
index of the whole tree.

The publisher's learned call graph is read as the embedded store keeps its own
(graph/index/sqlite/learned.py): a write of a file forgets the relations it may have changed,
so here a shared subject is not recalled when a masked file spells its name (or, for a dunder,
operator or constructor, its class's) in its local text or in its shared one (a removed call),
when it is related to a symbol of a masked file, or when its own file is masked. The search
then asks the server, as it would of the same tree indexed locally. What this root learns
about shared symbols is kept beside it, in memory, by the same rules (side_learned.py).
"""

from __future__ import annotations

import dataclasses
import heapq
import threading
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Protocol

import numpy
import numpy.typing as npt

from lensmux.graph.index.builder.preparing.document_symbols import CHUNKED_KINDS
from lensmux.graph.index.identifiers import mentions
from lensmux.graph.index.interface import IndexReader, Learned, VectorReader, learned_symbols
from lensmux.graph.index.records import ChunkRecord, FileRecord, SymbolRecord
from lensmux.graph.index.team.side_learned import SideEntry, SideLearned, forgetting_names

__all__ = ["SHARED_ID_BASE", "MaskedReader", "MaskedVectors", "OverlayReader", "OverlayVectors"]

SHARED_ID_BASE = 1 << 52


class MaskedReader(IndexReader, Protocol):
    """A shared store that can leave out the files of a mask in every answer."""

    def set_mask(self, paths: Collection[str]) -> None:
        """From now on, answer as if the files at these paths were not stored."""
        ...

    @property
    def masked_words(self) -> frozenset[str]:
        """The words the masked files' stored text spells (a call this tree removed is only there)."""
        ...

    def stale_learned(self, words: Collection[str]) -> dict[int, str]:
        """Learned subjects (id -> kind) a change of the masked files may have made stale.

        Those a write of them would forget in the store's own rules: named (or, for a dunder,
        operator or constructor, their class named) by `words` or by the masked files' stored
        text, related to a symbol of a masked file, or of a masked file themselves.
        """
        ...


class MaskedVectors(VectorReader, Protocol):
    """Shared vectors that leave out the chunks of the masked files."""

    def set_mask_ids(self, chunk_ids: Collection[int]) -> None:
        """From now on, never return these chunk ids."""
        ...


def _shared(i: int) -> bool:
    return i >= SHARED_ID_BASE


def _up(i: int | None) -> int | None:
    return None if i is None else i + SHARED_ID_BASE


def _chunk(c: ChunkRecord) -> ChunkRecord:
    return dataclasses.replace(c, id=c.id + SHARED_ID_BASE, symbol_id=_up(c.symbol_id))


def _symbol(s: SymbolRecord) -> SymbolRecord:
    return dataclasses.replace(s, id=s.id + SHARED_ID_BASE, parent_id=_up(s.parent_id))


def _merge(local: list[tuple[int, float]], shared: list[tuple[int, float]], k: int) -> list[tuple[int, float]]:
    lifted = [(i + SHARED_ID_BASE, s) for i, s in shared]
    return heapq.nlargest(k, [*local, *lifted], key=lambda hit: (hit[1], -hit[0]))


class OverlayReader:
    """IndexReader over (shared minus masked files) plus local."""

    def __init__(self, shared: MaskedReader, local: IndexReader, masked: Callable[[], Collection[str]]) -> None:
        self.shared = shared
        self.local = local
        self._masked = masked
        self._mask: frozenset[str] = frozenset()
        # The shared learned subjects not recalled, and how many of them are learnable
        # (graph/index/builder/preparing/document_symbols.py CHUNKED_KINDS), as of the local generation read last.
        self._stale: frozenset[int] = frozenset()
        self._stale_learnable = 0
        self._stale_as_of: int | None = None
        self._stale_words: frozenset[str] | None = None
        # Masked path -> (its local sha256, the words its local text spells): re-read when it changes.
        self._local_words: dict[str, tuple[str, frozenset[str]]] = {}
        # Every word a masked file spells, locally or in its shared text: what forgets a side relation.
        self._all_words: frozenset[str] = frozenset()
        # What this root learned about shared symbols (side_learned.py): the snapshot is read-only
        # here. It lives as long as this reader, i.e. as the SharedIndex of one attached snapshot.
        self.side = SideLearned()
        # refresh() and the check before keeping side relations see one state of the mask.
        self._lock = threading.Lock()
        self.refresh()

    def refresh(self) -> None:
        """Read the mask again (the local side's files and the shared files this tree lacks).

        The stale shared relations are found again when the mask or the local index changed
        (an already masked file can be edited again): one pass over the masked files' text,
        the unchanged ones' words kept from the last pass.
        """
        with self._lock:
            generation = self.local.generation
            mask = frozenset(self._masked())
            if mask != self._mask:
                self._mask = mask
                self.shared.set_mask(mask)
                self._stale_words = None
            if self._stale_words is None or self._stale_as_of != generation:
                self._find_stale()
                self._stale_as_of = generation

    def _find_stale(self) -> None:
        held: dict[str, tuple[str, frozenset[str]]] = {}
        words: set[str] = set()
        for path in self._mask:
            record = self.local.file(path)
            if record is None:
                continue  # gone from this tree: only its shared text (the shared side's) counts
            known = self._local_words.get(path)
            if known is None or known[0] != record.sha256:
                spelled = frozenset().union(*(mentions(c.text) for c in self.local.chunks_in_file(path)))
                known = (record.sha256, spelled)
            held[path] = known
            words |= known[1]
        self._local_words = held
        if frozenset(words) == self._stale_words:
            return
        stale = self.shared.stale_learned(words)
        self._stale_learnable = sum(1 for kind in stale.values() if kind in CHUNKED_KINDS)
        self._stale = frozenset(stale)
        self._stale_words = frozenset(words)
        self._all_words = self._stale_words | self.shared.masked_words
        self.side.drop_stale(self._mask, self._all_words)

    @property
    def mask(self) -> frozenset[str]:
        """The shared files hidden by the local side."""
        return self._mask

    @property
    def root(self) -> Path:
        return self.local.root

    @property
    def generation(self) -> int:
        return self.local.generation

    def relative(self, path: str | Path) -> str | None:
        return self.local.relative(path)

    def _side(self, path: str | Path) -> IndexReader:
        rel = self.local.relative(path)
        return self.local if rel is not None and rel in self._mask else self.shared

    def fts_search(self, match: str, k: int = 20) -> list[tuple[int, float]]:
        return _merge(self.local.fts_search(match, k), self.shared.fts_search(match, k), k)

    def keyword_search(self, query: str, k: int = 20) -> list[tuple[int, float]]:
        return _merge(self.local.keyword_search(query, k), self.shared.keyword_search(query, k), k)

    def lookup_symbols(self, name: str, limit: int = 50) -> list[SymbolRecord]:
        found = [*self.local.lookup_symbols(name, limit), *map(_symbol, self.shared.lookup_symbols(name, limit))]
        wanted = name.strip().replace("::", ".")

        def order(s: SymbolRecord) -> tuple[int, bool, str, int]:
            # The stores' own ORDER BY (graph/index/sqlite/queries.py lookup_symbols).
            tier = 0 if s.qualified_name == wanted else 1 if s.name == wanted else 2
            if tier == 2 and s.qualified_name.lower() != wanted.lower():
                tier = 3
            return tier, s.kind not in CHUNKED_KINDS, s.path, s.range.start_line

        return sorted(found, key=order)[:limit]

    def files_matching(self, path_fragment: str, limit: int = 50) -> list[FileRecord]:
        fragment = path_fragment.strip().strip("/")
        found = [*self.local.files_matching(fragment, limit), *self.shared.files_matching(fragment, limit)]

        def order(f: FileRecord) -> tuple[bool, bool, int, str]:
            return f.path != fragment, not f.path.endswith("/" + fragment), len(f.path), f.path

        return sorted(found, key=order)[:limit]

    def file(self, path: str | Path) -> FileRecord | None:
        return self._side(path).file(path)

    def chunk(self, chunk_id: int) -> ChunkRecord | None:
        if _shared(chunk_id):
            found = self.shared.chunk(chunk_id - SHARED_ID_BASE)
            return None if found is None or found.path in self._mask else _chunk(found)
        return self.local.chunk(chunk_id)

    def chunks(self, chunk_ids: Iterable[int]) -> list[ChunkRecord]:
        wanted = list(dict.fromkeys(chunk_ids))
        local = {c.id: c for c in self.local.chunks(i for i in wanted if not _shared(i))}
        shared = {
            c.id: c
            for c in map(_chunk, self.shared.chunks(i - SHARED_ID_BASE for i in wanted if _shared(i)))
            if c.path not in self._mask
        }
        return [found for i in wanted if (found := local.get(i) or shared.get(i)) is not None]

    def chunks_in_file(self, path: str | Path) -> list[ChunkRecord]:
        side = self._side(path)
        found = side.chunks_in_file(path)
        return found if side is self.local else [_chunk(c) for c in found]

    def chunks_for_symbol(self, symbol_id: int) -> list[ChunkRecord]:
        if _shared(symbol_id):
            found = self.shared.chunks_for_symbol(symbol_id - SHARED_ID_BASE)
            return [_chunk(c) for c in found if c.path not in self._mask]
        return self.local.chunks_for_symbol(symbol_id)

    def symbol(self, symbol_id: int) -> SymbolRecord | None:
        if _shared(symbol_id):
            found = self.shared.symbol(symbol_id - SHARED_ID_BASE)
            return None if found is None or found.path in self._mask else _symbol(found)
        return self.local.symbol(symbol_id)

    def symbols_in_file(self, path: str | Path) -> list[SymbolRecord]:
        side = self._side(path)
        found = side.symbols_in_file(path)
        return found if side is self.local else [_symbol(s) for s in found]

    def enclosing_symbol(
        self, path: str | Path, line: int, kinds: Collection[str] | None = None
    ) -> SymbolRecord | None:
        side = self._side(path)
        found = side.enclosing_symbol(path, line, kinds)
        return found if found is None or side is self.local else _symbol(found)

    def recall_learned(self, symbol_ids: Iterable[int]) -> Learned:
        """Local subjects from the local side; shared ones from the side map, else the publisher's unless stale."""
        ids = list(symbol_ids)
        out = self.local.recall_learned(i for i in ids if not _shared(i))
        wanted = [i - SHARED_ID_BASE for i in ids if _shared(i)]
        side = self.side.recall(wanted)
        stale = self._stale
        shared = self.shared.recall_learned(i for i in wanted if i not in side and i not in stale)
        for subject, related in (*side.items(), *shared.items()):
            out[subject + SHARED_ID_BASE] = [(rel, other + SHARED_ID_BASE) for rel, other in related]
        return out

    def remember_learned(self, relations: Mapping[int, Sequence[tuple[str, int]]], generation: int) -> int:
        """Relations among local symbols go to the local index, those among shared ones to the side map.

        A mixed subject (a shared subject with a local other end, or the reverse) is not kept:
        a local id names a row the local index replaces, with a new id, on every write of its
        file, and nothing would forget the shared half's relation when that happens; its
        server is asked again instead.
        """
        local: dict[int, list[tuple[str, int]]] = {}
        side: dict[int, Sequence[tuple[str, int]]] = {}
        for subject, related in relations.items():
            ends = [_shared(subject), *(_shared(other) for _, other in related)]
            if not any(ends):
                local[subject] = list(related)
            elif all(ends):
                side[subject] = related
        stored = self.local.remember_learned(local, generation) if local else 0
        return stored + (self._keep_side(side, generation) if side else 0)

    def _keep_side(self, relations: Mapping[int, Sequence[tuple[str, int]]], generation: int) -> int:
        if self.local.generation != generation:
            return 0  # a file was written since the answers were read: they may be stale
        involved = {i - SHARED_ID_BASE for i in learned_symbols(relations)}
        records = {i: self.shared.symbol(i) for i in sorted(involved)}
        subjects = [s - SHARED_ID_BASE for s in relations]
        by_publisher = self.shared.recall_learned(subjects).keys()
        entries: dict[int, SideEntry] = {}
        for subject, related in relations.items():
            record = records[subject - SHARED_ID_BASE]
            others = [records[other - SHARED_ID_BASE] for _, other in related]
            if record is None or record.kind not in CHUNKED_KINDS or any(o is None for o in others):
                continue  # not learnable, or an end is not in the snapshot (as storable_relations skips it)
            entries[record.id] = SideEntry(
                relations=tuple((rel, other - SHARED_ID_BASE) for rel, other in related),
                paths=frozenset((record.path, *(o.path for o in others if o is not None))),
                names=forgetting_names(record, self.shared.symbol),
                by_publisher=record.id in by_publisher,
            )
        with self._lock:
            if self._stale_as_of != generation or self.local.generation != generation:
                return 0  # the mask (or a write) moved on since the answers were read
            fresh = {i: e for i, e in entries.items() if not e.stale(self._mask, self._all_words)}
            return self.side.keep(fresh)

    def unlearned_symbols(self, after_id: int, limit: int, languages: Collection[str] | None = None) -> list[int]:
        """The local side's, then in id order the shared ones learned neither by the publisher nor here.

        With `languages`, only symbols of files in those languages, on both sides.

        Shared symbols of a masked file, or that a masked file names, are left out: what would
        be learned of them now would not be kept. The mask is read again first: the learner
        runs no search before it that would.
        """
        self.refresh()
        out = [] if _shared(after_id) else self.local.unlearned_symbols(after_id, limit, languages)
        after = after_id - SHARED_ID_BASE if _shared(after_id) else 0
        while len(out) < limit:
            page = self.shared.unlearned_symbols(after, limit, languages)
            if not page:
                break
            after = page[-1]
            for i in page:
                if i in self.side:
                    continue
                record = self.shared.symbol(i)
                if record is None or record.path in self._mask:
                    continue
                if forgetting_names(record, self.shared.symbol) & self._all_words:
                    continue
                out.append(i + SHARED_ID_BASE)
                if len(out) == limit:
                    break
        return out

    def learned_counts(self) -> tuple[int, int]:
        """Both sides' counts and the side map's; the stale shared subjects are not counted as learned."""
        local, shared = self.local.learned_counts(), self.shared.learned_counts()
        learned = local[0] + shared[0] - self._stale_learnable + self.side.counted(self._stale)
        return learned, local[1] + shared[1]


class OverlayVectors:
    """VectorReader over the shared vectors (masked files left out) plus the local ones."""

    def __init__(self, shared: VectorReader, local: VectorReader) -> None:
        self.shared = shared
        self.local = local

    def __len__(self) -> int:
        return len(self.local) + len(self.shared)

    def search(self, vector: npt.NDArray[numpy.float32], k: int, ef: int | None = None) -> list[tuple[int, float]]:
        return _merge(self.local.search(vector, k, ef), self.shared.search(vector, k, ef), k)
