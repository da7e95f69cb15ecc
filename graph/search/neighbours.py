"""After the rerank: graph neighbours of the top hits fill part of the answer's tail.

The rerank (rerank.py) can never rank a node that only expansion found above a seed of
even middling text relevance, and stage 1 hands over 3 x top_k seeds, so on the
localization benchmark (docs/benchmarks.md, "Localization from real history") expansion,
Louvain and PageRank changed no recall: of the changed functions stage 1 left out of its
first 20, most sat in a file its first 20 already held. The functions a change touches
together are callers, callees and same-file siblings of each other; the query need not
match them.

So the answer keeps its first `protect` places (and every anchor) exactly as ranked:
strong direct hits are never moved. From there on the remaining places alternate, one
direct candidate in rank order, then one neighbour, until top_k are filled; a neighbour
takes one of the weakest direct hits' places and never one ahead of it. Neighbours come
from the first `from_top` ranked symbols, best first and round robin (one per top hit in
turn), each top hit's own neighbours in this order:

1. its same-file siblings that stage 1 also scored, by text relevance (a candidate the
   query matched a little, next to a hit it matched strongly);
2. its callers and callees in the graph expansion found (no new server request);
3. the remaining outermost functions and methods of its file, nearest line first.

Everything here reads the index (one `symbols_in_file` per top file) and the expansion
already done: it adds no server round trip.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from lensmux.graph.index.chunking import CALLABLE_KINDS
from lensmux.graph.search.catalog import Catalog, Node, symbol_node
from lensmux.graph.search.expand import Relation

__all__ = ["NeighbourFill", "fill", "neighbours_of"]

REASON_SIBLING = "neighbour:same_file:"
REASON_CALL = "neighbour:calls:"


@dataclass(slots=True)
class NeighbourFill:
    """The answer's order, and the nodes and reasons of the neighbours it took in."""

    order: list[str]
    added: dict[str, Node] = field(default_factory=dict)
    origin: dict[str, str] = field(default_factory=dict)  # neighbour key -> the top hit it came from
    reasons: dict[str, list[str]] = field(default_factory=dict)


def _outermost_callables(catalog: Catalog, path: str) -> list[Node]:
    """The file's functions and methods not nested in another function, in line order."""
    symbols = catalog.store.symbols_in_file(path)
    callables = {s.id for s in symbols if s.kind in CALLABLE_KINDS}
    return [symbol_node(s) for s in symbols if s.id in callables and s.parent_id not in callables]


def neighbours_of(
    top: Node,
    catalog: Catalog,
    relations: Sequence[Relation],
    nodes: Mapping[str, Node],
    relevance: Mapping[str, float],
    *,
    generic: Collection[str],
) -> list[tuple[Node, str]]:
    """One top hit's neighbours, in the module docstring's order, each with its reason."""
    name = top.qualified_name
    siblings = [n for n in _outermost_callables(catalog, top.path) if n.key != top.key]
    scored = sorted((n for n in siblings if relevance.get(n.key, 0.0) > 0), key=lambda n: (-relevance[n.key], n.key))
    out: list[tuple[Node, str]] = [(n, REASON_SIBLING + name) for n in scored]
    for relation in relations:
        if relation.kind != "calls" or top.key not in (relation.source, relation.target):
            continue
        other = nodes.get(relation.target if relation.source == top.key else relation.source)
        if other is not None and other.expandable:
            out.append((other, REASON_CALL + name))
    line = top.range.start_line
    rest = sorted(
        (n for n in siblings if relevance.get(n.key, 0.0) <= 0),
        key=lambda n: (abs(n.range.start_line - line), n.range.start_line),
    )
    out += [(n, REASON_SIBLING + name) for n in rest]
    seen: set[str] = set()
    kept: list[tuple[Node, str]] = []
    for node, why in out:
        if node.key not in seen and node.name.lower() not in generic:
            seen.add(node.key)
            kept.append((node, why))
    return kept


def fill(
    order: Sequence[str],
    nodes: Mapping[str, Node],
    catalog: Catalog,
    relations: Sequence[Relation],
    relevance: Mapping[str, float],
    *,
    top_k: int,
    protect: int,
    from_top: int,
    anchored: Collection[str] = (),
    generic: Collection[str] = frozenset(),
) -> NeighbourFill:
    """The first top_k of `order` with neighbours interleaved after its first `protect` places.

    `order` is the rerank's, best first; `anchored` keys (named symbols and files) are kept
    wherever they are, like the protected prefix. With top_k <= protect nothing changes.
    """
    named = sum(1 for key in order if key in anchored)
    if top_k <= max(protect, named) or from_top <= 0:
        return NeighbourFill(list(order[: max(top_k, named)]))
    head = [key for i, key in enumerate(order) if i < protect or key in anchored]
    tops = [nodes[key] for key in order if nodes[key].expandable and nodes[key].kind in CALLABLE_KINDS][:from_top]
    lists = [neighbours_of(t, catalog, relations, nodes, relevance, generic=generic) for t in tops]
    pool: list[tuple[Node, str, str]] = []
    for i in range(max((len(found) for found in lists), default=0)):
        pool += [(found[i][0], found[i][1], top.key) for top, found in zip(tops, lists, strict=True) if i < len(found)]
    result = NeighbourFill(list(head))
    placed = set(head)
    direct = iter(key for key in order if key not in placed)
    neighbours = iter(pool)
    take_neighbour = False
    while len(result.order) < top_k:
        key = _next_neighbour(neighbours, placed, result) if take_neighbour else next(direct, None)
        if key is None:
            key = next(direct, None) if take_neighbour else _next_neighbour(neighbours, placed, result)
            if key is None:
                break
        result.order.append(key)
        placed.add(key)
        take_neighbour = not take_neighbour
    return result


def _next_neighbour(pool: Iterator[tuple[Node, str, str]], placed: set[str], result: NeighbourFill) -> str | None:
    for node, why, origin in pool:
        if node.key in placed:
            continue
        result.origin[node.key] = origin
        result.reasons.setdefault(node.key, []).append(why)
        result.added[node.key] = node
        return node.key
    return None
