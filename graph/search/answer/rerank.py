"""Stage 5: score = w1 * text relevance + w2 * personalised PageRank + w3 * proximity to the seeds.

Text relevance comes from stage 1 (0 for nodes only expansion found). Proximity is
1 / (1 + hops to the nearest seed over any edge): 1 for every seed.

Centrality is personalised PageRank over the usage edges (calls, references, inherits;
containment is not use) restarting at the seeds with weights p = exp(-(1 - relevance) / T)
(T = 0.2): stage 1 hands over up to 3k candidates, and with linear weights their long
tail of weak vector hits together outweighs the few strong ones, so a utility they all
call would look "central to the query" while central only to the noise. Each node's
centrality is max(PageRank, p) divided by the largest p, capped at 1:

- with no usage edges (no server, depth 0) it is p itself, so the order is stage 1's;
- an edge can only add: a well-matched function nobody calls is not pushed down by
  seeds that merely have callers (plain PageRank moves mass away from a seed whose
  neighbours are not seeds, and max-normalisation then hands the top to the hub);
- a node reaches 1 only by gathering as much restart mass as the best seed has alone.

Hence the guarantee the issue asks for: the best seed (relevance 1, centrality 1,
proximity 1) scores w1 + w2 + w3, which nothing else can exceed; a node found only by
expansion scores at most w2 + w3 / 2; among seeds, one moves above another only when
the graph links it to enough seed mass to close the text gap.

PageRank is a small power iteration in numpy: networkx's own needs scipy, which
lensmux does not depend on, and the graphs here have at most a few hundred nodes.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass

import networkx as nx
import numpy

from lensmux.graph.search.config import Weights

__all__ = ["Scores", "personalized_pagerank", "proximity", "rerank", "restart_weights"]

_MAX_ITERATIONS = 100
_TOLERANCE = 1e-8


@dataclass(frozen=True, slots=True)
class Scores:
    """One node's three factors and their weighted sum."""

    text: float
    centrality: float
    proximity: float
    score: float


def personalized_pagerank(graph: nx.Graph, restart: Mapping[str, float], alpha: float) -> dict[str, float]:
    """PageRank over weighted edges restarting at `restart` (uniform if all zero); sums to 1."""
    nodes = list(graph.nodes)
    n = len(nodes)
    if n == 0:
        return {}
    index = {node: i for i, node in enumerate(nodes)}
    p = numpy.array([max(0.0, restart.get(node, 0.0)) for node in nodes], dtype=numpy.float64)
    p = p / p.sum() if p.sum() > 0 else numpy.full(n, 1.0 / n)
    matrix = numpy.zeros((n, n), dtype=numpy.float64)
    for a, b, data in graph.edges(data=True):
        weight = float(data.get("weight", 1.0))
        matrix[index[a], index[b]] += weight
        matrix[index[b], index[a]] += weight
    out_weight = matrix.sum(axis=1)
    dangling = out_weight == 0
    transition = numpy.divide(matrix, out_weight[:, None], out=numpy.zeros_like(matrix), where=~dangling[:, None])
    x = p.copy()
    for _ in range(_MAX_ITERATIONS):
        previous = x
        x = alpha * (previous @ transition + previous[dangling].sum() * p) + (1 - alpha) * p
        if numpy.abs(x - previous).sum() < n * _TOLERANCE:
            break
    return {node: float(x[i]) for i, node in enumerate(nodes)}


def proximity(graph: nx.Graph, seeds: set[str]) -> dict[str, float]:
    """1 / (1 + hops to the nearest seed), 0 when no seed is reachable."""
    hops: dict[str, int] = {s: 0 for s in sorted(seeds) if s in graph}
    queue = deque(hops)
    while queue:
        node = queue.popleft()
        for neighbour in graph.neighbors(node):
            if neighbour not in hops:
                hops[neighbour] = hops[node] + 1
                queue.append(neighbour)
    return {node: 1.0 / (1 + hops[node]) if node in hops else 0.0 for node in graph.nodes}


def restart_weights(relevance: Mapping[str, float], temperature: float) -> dict[str, float]:
    """exp(-(1 - relevance) / temperature) per seed: restarts concentrate on the strongest seeds."""
    if temperature <= 0:
        return dict(relevance)
    return {key: math.exp((value - 1.0) / temperature) for key, value in relevance.items()}


def rerank(
    graph: nx.Graph,
    usage: nx.Graph,
    relevance: Mapping[str, float],
    seeds: set[str],
    weights: Weights,
    *,
    alpha: float,
    temperature: float,
) -> dict[str, Scores]:
    """Scores of every node of graph; centrality walks only usage edges, proximity all of them."""
    restart = {k: v for k, v in restart_weights(relevance, temperature).items() if k in graph}
    total = sum(restart.values())
    share = {k: v / total for k, v in restart.items()} if total > 0 else {}
    pagerank = personalized_pagerank(usage, restart, alpha)
    gathered = {node: max(pagerank.get(node, 0.0), share.get(node, 0.0)) for node in graph.nodes}
    top = max(share.values(), default=0.0) or max(gathered.values(), default=0.0)
    near = proximity(graph, seeds)
    out: dict[str, Scores] = {}
    for node in graph.nodes:
        text = relevance.get(node, 0.0)
        central = min(1.0, gathered[node] / top) if top > 0 else 0.0
        prox = near[node]
        score = weights.w1 * text + weights.w2 * central + weights.w3 * prox
        out[node] = Scores(text, central, prox, score)
    return out
