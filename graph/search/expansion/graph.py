"""Stages 3 and 4: the symbol graph, a networkx DiGraph with typed, weighted edges.

Edges point caller -> callee (calls), referrer -> referenced (references), subclass ->
base (inherits) and parent -> child (contains, from the index, between nodes already in
the graph). Two relations between the same pair become one edge carrying both types
and the larger weight; `usage` is the same without `contains`, since a class holding
several hits is not for that reason used by them (PageRank reads `usage`). Nodes and
edges are inserted in sorted order, so every later algorithm (Louvain's node shuffling
included) sees the same graph for the same input.

Stage 4: Louvain communities on the undirected graph, and the noise filter. Noise is
removed before Louvain so it cannot glue communities together: a generic symbol (`log`,
`get`, `__init__`, ...) goes unless the query itself found it, and afterwards a community
goes when none of its members is a seed and no edge links it to one. python-louvain
shuffles nodes with its random state; with a fixed state and sorted insertion order the
same graph always gives the same partition.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

import community
import networkx as nx

from lensmux.graph.search.catalog import Catalog, Node, symbol_node
from lensmux.graph.search.config import EdgeWeights
from lensmux.graph.search.expansion.expand import Relation

__all__ = ["Clustering", "build_graph", "cluster", "containment", "undirected"]

_MAX_ANCESTORS = 16


def containment(nodes: Mapping[str, Node], catalog: Catalog) -> list[Relation]:
    """parent -> child for every node whose nearest ancestor in the graph exists (blocking)."""
    out: list[Relation] = []
    for key in sorted(nodes):
        parent_id = nodes[key].parent_id
        for _ in range(_MAX_ANCESTORS):
            if parent_id is None:
                break
            parent = catalog.symbol(parent_id)
            if parent is None:
                break
            parent_key = symbol_node(parent).key
            if parent_key in nodes:
                out.append(Relation(parent_key, key, "contains"))
                break
            parent_id = parent.parent_id
    return out


def build_graph(nodes: Mapping[str, Node], relations: Sequence[Relation], weights: EdgeWeights) -> nx.DiGraph:
    """The DiGraph of nodes (by key) with merged, weighted, typed edges; self-loops dropped."""
    graph = nx.DiGraph()
    graph.add_nodes_from(sorted(nodes))
    merged: dict[tuple[str, str], tuple[float, float, set[str]]] = {}
    for rel in relations:
        if rel.source == rel.target or rel.source not in nodes or rel.target not in nodes:
            continue
        weight, usage, types = merged.get((rel.source, rel.target), (0.0, 0.0, set()))
        this = weights.of(rel.kind)
        usage = usage if rel.kind == "contains" else max(usage, this)
        merged[rel.source, rel.target] = (max(weight, this), usage, types | {rel.kind})
    for (source, target), (weight, usage, types) in sorted(merged.items()):
        graph.add_edge(source, target, weight=weight, usage=usage, types=tuple(sorted(types)))
    return graph


def undirected(graph: nx.DiGraph, keep: set[str] | None = None, *, attr: str = "weight") -> nx.Graph:
    """The undirected projection of one edge attribute (both directions summed, zeros dropped), within keep."""
    out = nx.Graph()
    out.add_nodes_from(n for n in sorted(graph.nodes) if keep is None or n in keep)
    summed: dict[tuple[str, str], float] = {}
    for source, target, data in graph.edges(data=True):
        if keep is not None and (source not in keep or target not in keep):
            continue
        pair = (source, target) if source < target else (target, source)
        summed[pair] = summed.get(pair, 0.0) + float(data[attr])
    for (a, b), weight in sorted(summed.items()):
        if weight > 0:
            out.add_edge(a, b, weight=weight)
    return out


@dataclass(frozen=True, slots=True)
class Clustering:
    """Surviving nodes, their community, the undirected graph they span and its usage edges."""

    community_of: dict[str, int]
    graph: nx.Graph
    usage: nx.Graph
    dropped_generic: int
    dropped_clusters: int


def cluster(
    graph: nx.DiGraph,
    *,
    seeds: Collection[str],
    names: Mapping[str, str],
    generic: frozenset[str],
    resolution: float,
    random_state: int,
) -> Clustering:
    """Filter generic non-seed nodes, partition with Louvain, drop communities not linked to a seed."""
    seed_set = set(seeds)
    keep = {n for n in graph.nodes if n in seed_set or names[n].lower() not in generic}
    dropped_generic = graph.number_of_nodes() - len(keep)
    projected = undirected(graph, keep)
    if projected.number_of_nodes() == 0:
        return Clustering({}, projected, projected, dropped_generic, 0)
    partition: dict[str, int] = community.best_partition(
        projected, weight="weight", resolution=resolution, random_state=random_state
    )
    members: dict[int, list[str]] = {}
    for node in sorted(partition):
        members.setdefault(partition[node], []).append(node)
    survivors: dict[str, int] = {}
    dropped_clusters = 0
    # Number communities by their smallest member so the ids do not depend on Louvain's labels.
    for number, group in enumerate(sorted(members.values(), key=lambda g: g[0])):
        linked = any(n in seed_set or any(m in seed_set for m in projected.neighbors(n)) for n in group)
        if not linked:
            dropped_clusters += 1
            continue
        survivors.update((n, number) for n in group)
    kept = set(survivors)
    kept_graph = projected.subgraph(sorted(kept)).copy()
    return Clustering(survivors, kept_graph, undirected(graph, kept, attr="usage"), dropped_generic, dropped_clusters)
