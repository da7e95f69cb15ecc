"""One expansion's view of the call graph the index has learned (graph/index/sqlite/learned.py).

Before asking a server about a symbol, the expansion reads what is stored for it; a
symbol whose every request was answered, by a server whose cross-file answers are
settled, is stored afterwards, unless a file was written in between (the store's
generation moved). Stored relations are what the servers answered, mapped to indexed
symbols exactly as live answers are, so a remembered symbol joins the graph as if it
had been asked.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field

from lensmux.graph.index import IndexReader, IndexStoreError
from lensmux.graph.search.catalog import Catalog, Node, symbol_node

log = logging.getLogger(__name__)

__all__ = ["Findings", "GraphMemory"]


@dataclass(slots=True)
class Findings:
    """What the servers said about one symbol, mapped to indexed symbols."""

    outgoing: list[tuple[Node, bool]] = field(default_factory=list)  # (callee, derived)
    incoming: list[Node] = field(default_factory=list)
    references: list[tuple[Node, bool]] = field(default_factory=list)  # (referrer, in its base list)


def _relations(findings: Findings) -> list[tuple[str, int]] | None:
    """Findings as stored rows; None when a node has no symbol id (it cannot be stored)."""
    rows: list[tuple[str, Node]] = [("calls_derived" if d else "calls", n) for n, d in findings.outgoing]
    rows += [("called_by", n) for n in findings.incoming]
    rows += [("base_of" if b else "referenced_by", n) for n, b in findings.references]
    if any(n.symbol_id is None for _, n in rows):
        return None
    return [(relation, n.symbol_id) for relation, n in rows if n.symbol_id is not None]


class GraphMemory:
    """Reads learned relations for a frontier and collects the ones worth storing."""

    def __init__(self, store: IndexReader, catalog: Catalog, max_neighbors: int) -> None:
        self.store = store
        self.catalog = catalog
        self.max_neighbors = max_neighbors
        # Taken before any answer is read: answers older than a file write are not stored.
        self.generation = store.generation
        self._fresh: dict[int, list[tuple[str, int]]] = {}

    def recall(self, nodes: Sequence[Node]) -> dict[str, Findings]:
        """Findings of the learned nodes among `nodes`, by key (worker thread)."""
        ids = {n.symbol_id: n for n in nodes if n.symbol_id is not None}
        if not ids:
            return {}
        try:
            stored = self.store.recall_learned(ids)
        except IndexStoreError as exc:
            log.warning("reading learned relations failed: %s", exc)
            return {}
        out: dict[str, Findings] = {}
        for subject, relations in stored.items():
            findings = self._findings(relations)
            if findings is not None:
                out[ids[subject].key] = findings
        return out

    def _findings(self, relations: Sequence[tuple[str, int]]) -> Findings | None:
        found = Findings()
        for relation, other in relations:
            record = self.catalog.symbol(other)
            if record is None:
                return None  # its file was rewritten since: ask again
            node = symbol_node(record)
            if relation in ("calls", "calls_derived"):
                found.outgoing.append((node, relation == "calls_derived"))
            elif relation == "called_by":
                found.incoming.append(node)
            else:
                found.references.append((node, relation == "base_of"))
        cap = self.max_neighbors
        found.outgoing, found.incoming, found.references = (
            found.outgoing[:cap],
            found.incoming[:cap],
            found.references[:cap],
        )
        return found

    def note(self, node: Node, findings: Findings) -> None:
        """Keep a node's complete findings for save()."""
        relations = _relations(findings)
        if node.symbol_id is not None and relations is not None:
            self._fresh[node.symbol_id] = relations

    @property
    def noted(self) -> int:
        """Nodes noted and not saved yet."""
        return len(self._fresh)

    def save(self) -> int:
        """Store what was noted (worker thread); returns symbols stored, 0 if a file was written meanwhile."""
        if not self._fresh:
            return 0
        fresh, self._fresh = self._fresh, {}
        try:
            return self.store.remember_learned(fresh, self.generation)
        except IndexStoreError as exc:
            log.warning("storing learned relations failed: %s", exc)
            return 0
