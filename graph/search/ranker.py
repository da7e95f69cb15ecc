"""Stage 1's learned ranker: a linear model over per-candidate features, trained held out.

The convex fusion (seeds.py) weighs two sources with a few hand-chosen constants; this
stage scores every fused candidate by w . x instead, where x holds what stage 1 knows
about the candidate (the convex score itself, cosine, BM25, ranks, how much of the query
its name and path contain, its kind, its language, whether it is test code) and a small
graph among the best candidates, built from the index alone (calls found in their text,
classes and their members): how many candidates call it or it calls, weighted by their
fused score, whether it touches one of the best three, its personalised PageRank there.

The weights are fitted by bench/search/train_ranker.py (pairwise logistic regression in
numpy over fourteen Python and C/C++ projects, each held out in turn; docs/benchmarks.md,
"Learned ranker") and shipped as ranker_weights.json beside this module. Held out, the
model beats the fusion alone on every project, so the stage is on by default. Its
largest weights: a C/C++ header -2.2 (the definition is what is asked for), the fusion's
own score +2.0, test code -1.9, the query's words in the symbol's name +1.9, a class
-1.8 (the benchmark asks for functions), the vector side's rank +1.7. A weights file
that cannot be read is logged and replaced by FUSION_ALONE, which orders as the stage off.
The model only reorders candidates: anchors keep their tiers above every candidate
(seeds.py), so what the query names still comes first, and the same inputs give the same
scores (no randomness; ties broken by node id).
"""

from __future__ import annotations

import json
import logging
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache, lru_cache
from importlib import resources

import numpy
import numpy.typing as npt

from lensmux.graph.index.builder.preparing.document_symbols import CALLABLE_KINDS, TYPE_KINDS
from lensmux.graph.index.identifiers import fts_terms
from lensmux.graph.search.catalog import Node

log = logging.getLogger(__name__)

__all__ = [
    "C_FAMILY",
    "FEATURES",
    "FUSION_ALONE",
    "HEADERS",
    "Candidate",
    "CandidateGraph",
    "QueryFacts",
    "RankerModel",
    "RankerWeightsError",
    "candidate_graph",
    "feature_matrix",
    "graph_candidates",
    "load_weights",
    "shipped_model",
]

# The features, in the order of the weights file. Every one is in [0, 1] (or [-1, 1]).
FEATURES: tuple[str, ...] = (
    "convex",  # the convex fusion's score, over the query's best (what stage 1 ranks by without the model)
    "vector",  # cosine of the candidate's best chunk (0 when the vector list does not hold it)
    "vector_rel",  # cosine / the query's best cosine
    "vector_rr",  # 1 / its rank in the vector list
    "keyword",  # BM25 of its best chunk / the query's best BM25
    "keyword_abs",  # min(1, BM25 / 40): how strong the match is in absolute terms
    "keyword_rr",  # 1 / its rank in the keyword list
    "keyword_cov",  # keyword x the share of the query's words the best keyword hits contain
    "both",  # both lists hold it
    "name_words",  # share of the query's words in the symbol's own name
    "qualified_words",  # share of the query's words in its qualified name (class, namespace)
    "path_words",  # share of the query's words in its file path
    "callable",  # function, method, constructor
    "type",  # class, struct, interface, enum
    "prose",  # a chunk no language server structured (README, text window)
    "test",  # test code, and the query is not about tests
    "c_family",  # a C or C++ file
    "c_keyword",  # c_family x keyword
    "c_vector",  # c_family x vector
    "header",  # a C/C++ header (.h, .hpp): declarations and prototypes, where the benchmark's answers never are
    "declaration",  # a header's symbol whose name a candidate outside the headers also has (its definition)
    "size",  # log lines, 1 at 1,000
    "mention",  # a capitalised word of the query names it (weak anchor)
    "callers",  # 1 - exp(-sum of the fused scores of the candidates calling it)
    "callees",  # 1 - exp(-sum of the fused scores of the candidates it calls)
    "family",  # its class, or one of its members, is a candidate
    "near_top",  # it is linked (call or containment) to one of the three best candidates
    "pagerank",  # personalised PageRank over the candidate graph, restarting at the fused scores, / max
)
# C and C++ sources: the embedding model reads their code worse than Python's, so their
# keyword side has a weight of its own in the fusion (FusionWeights.keyword_c) and features here.
C_FAMILY = (".c", ".h", ".cc", ".cpp", ".cxx", ".hh", ".hpp", ".hxx")
HEADERS = (".h", ".hh", ".hpp", ".hxx")
_STRENGTH = 40.0
_SIZE_LINES = 1000.0
# Candidates the graph is built over (the best by fused score), and what a call site looks like.
GRAPH_CANDIDATES = 40
_CALL_SITE = re.compile(r"\b([A-Za-z_][A-Za-z0-9_]*)\s*\(")
_PAGERANK_ALPHA = 0.85
_PAGERANK_ITERATIONS = 50


@dataclass(frozen=True, slots=True)
class Candidate:
    """What stage 1 found about one node, before any model."""

    node: Node
    convex: float  # the convex fusion's score (seeds._fuse)
    cosine: float | None  # best chunk's cosine, None when not in the vector list
    vector_rank: int | None
    bm25: float | None  # best chunk's BM25, None when not in the keyword list
    keyword_rank: int | None
    mention: bool = False  # a capitalised word of the query names it
    test: bool = False  # test code, and the query is not about tests


@dataclass(frozen=True, slots=True)
class QueryFacts:
    """What the features need of the query and of the lists as a whole."""

    words: Sequence[Sequence[str]]  # per content word of the query, its FTS terms (seeds.query_words)
    best_cosine: float
    best_bm25: float
    coverage: float


@dataclass(frozen=True, slots=True)
class CandidateGraph:
    """Edges among the best candidates: calls (caller, callee) and containment (parent, member)."""

    calls: tuple[tuple[str, str], ...]
    contains: tuple[tuple[str, str], ...]


def graph_candidates(candidates: Sequence[Candidate], limit: int = GRAPH_CANDIDATES) -> list[Candidate]:
    """The candidates the graph is built over: the `limit` best by convex score (ties by id)."""
    return sorted(candidates, key=lambda c: (-c.convex, c.node.key))[:limit]


def candidate_graph(best: Sequence[Candidate], texts: Mapping[str, str]) -> CandidateGraph:
    """Calls and containment among `best`, from the index alone.

    A call is a `name(` in a candidate's best chunk (`texts`: node key -> chunk text) naming
    exactly one other candidate of the set; containment is a candidate's parent symbol being
    another candidate. Both lists come out in a fixed order (the candidates', then the text's).
    """
    by_name: dict[str, list[str]] = {}
    by_symbol: dict[int, str] = {}
    for c in best:
        by_name.setdefault(c.node.name, []).append(c.node.key)
        if c.node.symbol_id is not None:
            by_symbol[c.node.symbol_id] = c.node.key
    calls: dict[tuple[str, str], None] = {}
    contains: dict[tuple[str, str], None] = {}
    for c in best:
        node = c.node
        if node.parent_id is not None and node.parent_id in by_symbol:
            contains.setdefault((by_symbol[node.parent_id], node.key), None)
        if node.kind not in CALLABLE_KINDS:
            continue
        for match in _CALL_SITE.finditer(texts.get(node.key, "")):
            targets = by_name.get(match.group(1), [])
            if len(targets) == 1 and targets[0] != node.key:
                calls.setdefault((node.key, targets[0]), None)
    return CandidateGraph(tuple(calls), tuple(contains))


@lru_cache(maxsize=16384)
def _tokens(text: str) -> frozenset[str]:
    """The FTS words of a name or path; cached across queries, since the same candidates come back."""
    return frozenset(fts_terms(text))


class _WordMatcher:
    """Share of the query's words (FTS term groups, prefix terms ending in `*`) a text contains."""

    def __init__(self, words: Sequence[Sequence[str]]) -> None:
        self._words = [
            (
                frozenset(t.strip('"').replace('""', '"') for t in terms if not t.endswith("*")),
                tuple(t[:-1].strip('"') for t in terms if t.endswith("*")),
            )
            for terms in words
        ]
        self._memo: dict[str, float] = {}

    def share(self, text: str) -> float:
        """Memoised: paths repeat over a query's candidates."""
        found = self._memo.get(text)
        if found is None:
            tokens = _tokens(text)
            hits = sum(
                1
                for exact, prefixes in self._words
                if not exact.isdisjoint(tokens) or (prefixes and any(t.startswith(prefixes) for t in tokens))
            )
            found = self._memo[text] = hits / len(self._words) if self._words else 0.0
        return found


def _pagerank(keys: Sequence[str], edges: Sequence[tuple[str, str]], restart: Mapping[str, float]) -> dict[str, float]:
    """Personalised PageRank over the undirected edges, / its max; {} without edges."""
    nodes = sorted({k for edge in edges for k in edge})
    if not nodes:
        return {}
    index = {k: i for i, k in enumerate(nodes)}
    matrix = numpy.zeros((len(nodes), len(nodes)))
    for a, b in edges:
        matrix[index[a], index[b]] = matrix[index[b], index[a]] = 1.0
    p = numpy.array([max(0.0, restart.get(k, 0.0)) for k in nodes])
    p = p / p.sum() if p.sum() > 0 else numpy.full(len(nodes), 1.0 / len(nodes))
    transition = matrix / matrix.sum(axis=1, keepdims=True)
    x = p.copy()
    for _ in range(_PAGERANK_ITERATIONS):
        x = _PAGERANK_ALPHA * (x @ transition) + (1 - _PAGERANK_ALPHA) * p
    top = float(x.max())
    wanted = set(keys)
    return {k: float(x[index[k]]) / top for k in nodes if k in wanted} if top > 0 else {}


def feature_matrix(
    candidates: Sequence[Candidate], facts: QueryFacts, graph: CandidateGraph
) -> npt.NDArray[numpy.float64]:
    """One row per candidate, one column per FEATURES entry (in that order)."""
    best_convex = max((c.convex for c in candidates), default=0.0)
    relevance = {c.node.key: (c.convex / best_convex if best_convex > 0 else 0.0) for c in candidates}
    callers: dict[str, float] = {}
    callees: dict[str, float] = {}
    linked: dict[str, set[str]] = {}
    for caller, callee in graph.calls:
        callers[callee] = callers.get(callee, 0.0) + relevance.get(caller, 0.0)
        callees[caller] = callees.get(caller, 0.0) + relevance.get(callee, 0.0)
    for a, b in (*graph.calls, *graph.contains):
        linked.setdefault(a, set()).add(b)
        linked.setdefault(b, set()).add(a)
    family = {k for edge in graph.contains for k in edge}
    top3 = {c.node.key for c in sorted(candidates, key=lambda c: (-c.convex, c.node.key))[:3]}
    pagerank = _pagerank([c.node.key for c in candidates], [*graph.calls, *graph.contains], relevance)
    words = _WordMatcher(facts.words)
    defined = {c.node.name for c in candidates if not c.node.path.endswith(HEADERS)}
    rows: list[list[float]] = []
    for c in candidates:
        node, key = c.node, c.node.key
        vector = vector_rel = vector_rr = keyword = keyword_abs = keyword_rr = 0.0
        if c.cosine is not None:
            vector = max(0.0, c.cosine)
            vector_rel = vector / facts.best_cosine if facts.best_cosine > 0 else 0.0
            vector_rr = 1.0 / c.vector_rank if c.vector_rank else 0.0
        if c.bm25 is not None and facts.best_bm25 > 0:
            keyword = c.bm25 / facts.best_bm25
            keyword_abs = min(1.0, c.bm25 / _STRENGTH)
            keyword_rr = 1.0 / c.keyword_rank if c.keyword_rank else 0.0
        c_family = float(node.path.endswith(C_FAMILY))
        header = node.path.endswith(HEADERS)
        lines = max(1, node.range.end_line - node.range.start_line + 1)
        rows.append(
            [
                relevance[key],
                vector,
                vector_rel,
                vector_rr,
                keyword,
                keyword_abs,
                keyword_rr,
                keyword * facts.coverage,
                float(c.cosine is not None and c.bm25 is not None),
                words.share(node.name),
                words.share(node.qualified_name),
                words.share(node.path),
                float(node.kind in CALLABLE_KINDS),
                float(node.kind in TYPE_KINDS),
                float(node.symbol_id is None),
                float(c.test),
                c_family,
                c_family * keyword,
                c_family * vector,
                float(header),
                float(header and node.name in defined),
                min(1.0, math.log(lines) / math.log(_SIZE_LINES)),
                float(c.mention),
                1.0 - math.exp(-callers.get(key, 0.0)),
                1.0 - math.exp(-callees.get(key, 0.0)),
                float(key in family),
                float(not linked.get(key, set()).isdisjoint(top3 - {key})),
                pagerank.get(key, 0.0),
            ]
        )
    return numpy.array(rows, dtype=numpy.float64).reshape(len(candidates), len(FEATURES))


class RankerWeightsError(ValueError):
    """A weights file that is not a ranker model (not JSON, no `weights` table, a non-number, an unknown feature)."""


@dataclass(frozen=True, slots=True)
class RankerModel:
    """Linear weights over FEATURES (a feature missing from the file weighs 0)."""

    weights: tuple[float, ...]
    trained_on: tuple[str, ...] = ()

    @classmethod
    def of(cls, weights: Mapping[str, float], trained_on: Sequence[str] = ()) -> RankerModel:
        """A model from a name -> weight table."""
        unknown = set(weights) - set(FEATURES)
        if unknown:
            raise RankerWeightsError(f"unknown ranker features: {sorted(unknown)}")
        values = tuple(weights.get(name, 0.0) for name in FEATURES)
        if not all(isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v) for v in values):
            raise RankerWeightsError("ranker weights must be finite numbers")
        return cls(tuple(float(v) for v in values), tuple(str(p) for p in trained_on))

    def table(self) -> dict[str, float]:
        """name -> weight, in FEATURES order."""
        return dict(zip(FEATURES, self.weights, strict=True))

    def score(self, matrix: npt.NDArray[numpy.float64]) -> npt.NDArray[numpy.float64]:
        """w . x per row."""
        return matrix @ numpy.asarray(self.weights, dtype=numpy.float64)

    def dumps(self) -> str:
        """The weights file's text."""
        return json.dumps({"trained_on": list(self.trained_on), "weights": self.table()}, indent=1) + "\n"

    @classmethod
    def loads(cls, text: str) -> RankerModel:
        """A model from the weights file's text; RankerWeightsError says what is wrong with it."""
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise RankerWeightsError(f"not JSON: {exc}") from None
        if not isinstance(data, dict) or not isinstance(data.get("weights"), dict):
            raise RankerWeightsError("no `weights` table")
        trained_on = data.get("trained_on", ())
        return cls.of(data["weights"], trained_on if isinstance(trained_on, list) else ())


WEIGHTS_FILE = "ranker_weights.json"
# What stage 1 ranks by without a usable model: the convex fusion's score alone.
FUSION_ALONE = RankerModel.of({"convex": 1.0})


def load_weights(read: Callable[[], str], where: str) -> RankerModel:
    """The model `read` returns the text of, or FUSION_ALONE (logged as an error) when it is unusable.

    A broken weights file must not break search: stage 1 then ranks as it does with the
    stage off, and the log names the file and what is wrong with it.
    """
    try:
        return RankerModel.loads(read())
    except (OSError, UnicodeDecodeError, RankerWeightsError) as exc:
        log.error("learned ranker: %s is unusable (%s); stage 1 ranks by the fusion alone", where, exc)
        return FUSION_ALONE


@cache
def shipped_model() -> RankerModel:
    """The weights shipped beside this module (FUSION_ALONE if the file is unusable)."""
    path = resources.files(__package__).joinpath(WEIGHTS_FILE)
    return load_weights(lambda: path.read_text(encoding="utf-8"), str(path))
