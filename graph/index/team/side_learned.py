"""What a team root learns about the snapshot's own symbols, kept beside the publisher's call graph (issue 24).

The snapshot is read-only to a root that overlays it, so relations a search (or the daemon's
learner) learns among shared symbols are kept here instead, by the overlay (overlay.py) of one
attached snapshot: a new snapshot starts with an empty map. Only relations whose subject and
every other end are shared symbols are kept; shared ids never change while the snapshot is
attached, so what is kept stays addressable.

Forgetting follows the stores' own rules (graph/index/sqlite/learned.py) over the overlay's mask:
a subject is stale when its own file or the file of any other end is masked, or when a masked
file spells its name (for a dunder, operator or constructor, its class's). Such a subject is never
kept, and is dropped when the mask or the masked files' words change, so the next search asks
the server again.

In memory only: a daemon restart forgets it and the next quiet time learns it again. The map
holds at most one entry per learnable symbol of the snapshot.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass

from lensmux.graph.index.identifiers import called_without_name
from lensmux.graph.index.interface import Learned
from lensmux.graph.index.records import SymbolRecord

__all__ = ["SideEntry", "SideLearned", "forgetting_names"]


def forgetting_names(symbol: SymbolRecord, lookup: Callable[[int], SymbolRecord | None]) -> frozenset[str]:
    """The words whose mention in a written file forgets what is learned of `symbol` (`lookup` finds its parent)."""
    if symbol.parent_id is not None and called_without_name(symbol.name, symbol.kind):
        parent = lookup(symbol.parent_id)
        if parent is not None:
            return frozenset((symbol.name, parent.name))
    return frozenset((symbol.name,))


@dataclass(frozen=True, slots=True)
class SideEntry:
    """One shared subject's relations (snapshot ids) and what forgets them."""

    relations: tuple[tuple[str, int], ...]
    # The subject's file and every other end's: masking one of them forgets the entry.
    paths: frozenset[str]
    # forgetting_names() of the subject.
    names: frozenset[str]
    # Whether the publisher had learned the subject too (learned_counts counts a subject once).
    by_publisher: bool

    def stale(self, mask: Collection[str], words: Collection[str]) -> bool:
        """Whether a change of the masked files, which spell `words`, may have changed the relations."""
        return any(p in mask for p in self.paths) or any(w in words for w in self.names)


class SideLearned:
    """Shared subject id (the snapshot's own) -> SideEntry; safe to use from several worker threads."""

    def __init__(self) -> None:
        self._entries: dict[int, SideEntry] = {}
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, subject: object) -> bool:
        return subject in self._entries

    def recall(self, ids: Iterable[int]) -> Learned:
        """The kept relations of those of `ids` that are kept."""
        with self._lock:
            found = {i: self._entries.get(i) for i in ids}
        return {i: list(e.relations) for i, e in found.items() if e is not None}

    def keep(self, entries: dict[int, SideEntry]) -> int:
        """Keep (or replace) these subjects' relations; returns how many."""
        with self._lock:
            self._entries.update(entries)
        return len(entries)

    def drop_stale(self, mask: Collection[str], words: Collection[str]) -> int:
        """Forget every subject a change of the masked files may have made stale; returns how many."""
        with self._lock:
            gone = [i for i, e in self._entries.items() if e.stale(mask, words)]
            for i in gone:
                del self._entries[i]
        return len(gone)

    def counted(self, publisher_stale: Collection[int]) -> int:
        """Kept subjects not already counted as the publisher's learned ones (those not made stale)."""
        with self._lock:
            return sum(1 for i, e in self._entries.items() if not e.by_publisher or i in publisher_stale)
