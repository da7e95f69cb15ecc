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
takes one of the weakest direct hits' places and never one ahead of it. Neighbours are
those of the first `from_top` ranked functions and methods, in this order:

1. their same-file siblings that stage 1 also scored, by text relevance (a candidate the
   query matched a little, in a file where it matched a function strongly);
2. their callers and callees in the graph expansion found, best top hit first;
3. the remaining outermost functions and methods of their files, best top hit first,
   nearest line first.

A neighbour the answer would hold anyway (in the ranking's first top_k) is not one, nor
is test code beside a top hit that is not itself test code (stage 1 demotes tests too).
Everything here reads the index (one `symbols_in_file` per top file) and the expansion
already done: it adds no server round trip. Off by default (SearchConfig.neighbour_from 0):
on the localization benchmark it pushed out about as many changed functions as it brought in.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from lensmux.graph.index.builder.preparing.document_symbols import CALLABLE_KINDS
from lensmux.graph.search.candidates.seeds import is_test_path
from lensmux.graph.search.catalog import Catalog, Node, symbol_node
from lensmux.graph.search.expansion.expand import Relation

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


def _outermost_callables(catalog: Catalog, path: str, memo: dict[str, list[Node]]) -> list[Node]:
    """The file's functions and methods not nested in another function, in line order (read once per file)."""
    if path not in memo:
        symbols = catalog.store.symbols_in_file(path)
        callables = {s.id for s in symbols if s.kind in CALLABLE_KINDS}
        memo[path] = [symbol_node(s) for s in symbols if s.id in callables and s.parent_id not in callables]
    return memo[path]


def neighbours_of(
    top: Node,
    catalog: Catalog,
    relations: Sequence[Relation],
    nodes: Mapping[str, Node],
    relevance: Mapping[str, float],
    *,
    generic: Collection[str],
    memo: dict[str, list[Node]] | None = None,
) -> list[tuple[Node, str, int]]:
    """One top hit's neighbours with their reason and tier (1-3 as in the module docstring), best first per tier."""
    name = top.qualified_name
    tests = is_test_path(top.path)
    siblings = [n for n in _outermost_callables(catalog, top.path, {} if memo is None else memo) if n.key != top.key]
    scored = sorted((n for n in siblings if relevance.get(n.key, 0.0) > 0), key=lambda n: (-relevance[n.key], n.key))
    out: list[tuple[Node, str, int]] = [(n, REASON_SIBLING + name, 1) for n in scored]
    for relation in relations:
        if relation.kind != "calls" or top.key not in (relation.source, relation.target):
            continue
        other = nodes.get(relation.target if relation.source == top.key else relation.source)
        if other is not None and other.expandable and other.key != top.key:
            out.append((other, REASON_CALL + name, 2))
    line = top.range.start_line
    rest = sorted(
        (n for n in siblings if relevance.get(n.key, 0.0) <= 0),
        key=lambda n: (abs(n.range.start_line - line), n.range.start_line),
    )
    out += [(n, REASON_SIBLING + name, 3) for n in rest]
    seen: set[str] = set()
    kept: list[tuple[Node, str, int]] = []
    for node, why, tier in out:
        if node.key in seen or node.name.lower() in generic or (is_test_path(node.path) and not tests):
            continue
        seen.add(node.key)
        kept.append((node, why, tier))
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
    ranked: list[tuple[tuple[float, ...], Node, str, str]] = []
    files: dict[str, list[Node]] = {}
    for t_rank, top in enumerate(tops):
        found = neighbours_of(top, catalog, relations, nodes, relevance, generic=generic, memo=files)
        for position, (node, why, tier) in enumerate(found):
            # Tier 1 across all top hits by relevance; tiers 2 and 3 by top hit, then their own order.
            rank = (tier, -relevance.get(node.key, 0.0), 0, position) if tier == 1 else (tier, 0.0, t_rank, position)
            ranked.append((rank, node, why, top.key))
    ranked.sort(key=lambda item: (item[0], item[1].key))
    pool = [(node, why, origin) for _, node, why, origin in ranked]
    result = NeighbourFill(list(head))
    # What the answer holds anyway is no neighbour: a place must bring something new.
    placed = set(order[:top_k]) | set(head)
    answer = set(head)
    direct = iter(key for key in order if key not in answer)
    neighbours = iter(pool)
    take_neighbour = False
    while len(result.order) < top_k:
        key = _next_neighbour(neighbours, placed, result) if take_neighbour else next(direct, None)
        if key is None:
            key = next(direct, None) if take_neighbour else _next_neighbour(neighbours, placed, result)
            if key is None:
                break
        result.order.append(key)
        answer.add(key)
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
