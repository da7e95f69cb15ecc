"""The search API shared by the control socket, HTTP and the CLI: request, response, root choice.

Every request check lives in `__post_init__`, so a request built in code is checked
exactly like one decoded from JSON; decoding errors become BadSearchRequest naming the
field. The response is identical everywhere (`lensmux search --json` prints it as is).
"""

from __future__ import annotations

import math
import re
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any, TypeVar

import msgspec

from lensmux.graph.search.errors import BadSearchRequest, RootNotReady, UnknownRoot

__all__ = [
    "MAX_QUERY_CHARS",
    "MAX_TOP_K",
    "ClusterResult",
    "Overrides",
    "Position",
    "Range",
    "RankingWeights",
    "SearchRequest",
    "SearchResponse",
    "StageTiming",
    "SymbolResult",
    "parse_request",
    "select_root",
]

MAX_TOP_K = 100
MAX_QUERY_CHARS = 4000
MAX_GRAPH_DEPTH = 3
MAX_RESOLUTION = 100.0
MAX_NEIGHBOUR_FROM = 100
_PATH_IN_MESSAGE = re.compile(r" - at `\$\.?([^`]*)`$")


def _finite(value: float, field: str) -> None:
    if not math.isfinite(value):
        raise BadSearchRequest(field, f"must be a finite number, got {value}")


class RankingWeights(msgspec.Struct, forbid_unknown_fields=True, frozen=True):
    """Rerank weights: w1 text relevance, w2 centrality, w3 proximity; omitted ones keep the defaults."""

    w1: float | None = None
    w2: float | None = None
    w3: float | None = None

    def __post_init__(self) -> None:
        given = [(name, v) for name, v in (("w1", self.w1), ("w2", self.w2), ("w3", self.w3)) if v is not None]
        for name, value in given:
            _finite(value, f"config_overrides.ranking_weights.{name}")
            if value < 0:
                raise BadSearchRequest(f"config_overrides.ranking_weights.{name}", f"must be >= 0, got {value}")
        if len(given) == 3 and sum(v for _, v in given) <= 0:
            raise BadSearchRequest("config_overrides.ranking_weights", "at least one weight must be > 0")


class Overrides(msgspec.Struct, forbid_unknown_fields=True, frozen=True):
    """Per-call changes to the engine's defaults."""

    ranking_weights: RankingWeights | None = None
    max_graph_depth: int | None = None
    clustering_resolution: float | None = None
    # Top functions whose graph neighbours fill the answer's tail (0: none; neighbours.py).
    neighbour_from: int | None = None

    def __post_init__(self) -> None:
        if self.neighbour_from is not None and not 0 <= self.neighbour_from <= MAX_NEIGHBOUR_FROM:
            raise BadSearchRequest(
                "config_overrides.neighbour_from",
                f"must be between 0 and {MAX_NEIGHBOUR_FROM}, got {self.neighbour_from}",
            )
        depth = self.max_graph_depth
        if depth is not None and not 0 <= depth <= MAX_GRAPH_DEPTH:
            raise BadSearchRequest(
                "config_overrides.max_graph_depth", f"must be between 0 and {MAX_GRAPH_DEPTH}, got {depth}"
            )
        resolution = self.clustering_resolution
        if resolution is not None:
            _finite(resolution, "config_overrides.clustering_resolution")
            if not 0 < resolution <= MAX_RESOLUTION:
                raise BadSearchRequest(
                    "config_overrides.clustering_resolution",
                    f"must be > 0 and <= {MAX_RESOLUTION:g}, got {resolution}",
                )


class SearchRequest(msgspec.Struct, forbid_unknown_fields=True, frozen=True):
    """One hybrid search; root may be None when exactly one root is indexed."""

    query: str
    root: str | None = None
    top_k: int = 10
    config_overrides: Overrides | None = None

    def __post_init__(self) -> None:
        if not self.query.strip():
            raise BadSearchRequest("query", "is empty")
        if len(self.query) > MAX_QUERY_CHARS:
            raise BadSearchRequest("query", f"is {len(self.query)} characters long; the limit is {MAX_QUERY_CHARS}")
        if not 1 <= self.top_k <= MAX_TOP_K:
            raise BadSearchRequest("top_k", f"must be between 1 and {MAX_TOP_K}, got {self.top_k}")
        if self.root is not None and not self.root.strip():
            raise BadSearchRequest("root", "is empty (omit it to use the only indexed root)")


_decoder = msgspec.json.Decoder(SearchRequest)


def parse_request(data: bytes | str | Mapping[str, Any]) -> SearchRequest:
    """Decode JSON text or an already-parsed object into a checked SearchRequest (BadSearchRequest if not)."""
    try:
        if isinstance(data, bytes | str):
            return _decoder.decode(data)
        return msgspec.convert(data, SearchRequest)
    except msgspec.ValidationError as exc:
        inner = exc.__context__
        if isinstance(inner, BadSearchRequest):
            raise BadSearchRequest(inner.field, inner.reason) from None
        message = str(exc)
        match = _PATH_IN_MESSAGE.search(message)
        field = match.group(1) if match else None
        reason = message[: match.start()] if match else message
        raise BadSearchRequest(field or None, reason) from None
    except msgspec.DecodeError as exc:
        raise BadSearchRequest(None, f"malformed JSON: {exc}") from None


# -- response ------------------------------------------------------------------------------------------


class Position(msgspec.Struct, frozen=True):
    """0-based line and character (the server's position encoding, UTF-16 under lensmux)."""

    line: int
    character: int


class Range(msgspec.Struct, frozen=True):
    """An LSP range."""

    start: Position
    end: Position


class SymbolResult(msgspec.Struct, frozen=True):
    """One returned symbol; id is `<file_path>:<qualified name>:<start line>`, file_path is root-relative."""

    id: str
    name: str
    kind: str
    file_path: str
    range: Range
    score: float
    raw_code: str
    reasons: list[str]

    @property
    def is_anchor(self) -> bool:
        """Whether the query named this symbol or its file."""
        return any(r.startswith("anchor:") for r in self.reasons)


class ClusterResult(msgspec.Struct, frozen=True):
    """A community of related symbols; score is its best symbol's score."""

    cluster_id: str
    score: float
    title: str
    symbols: list[SymbolResult]


class StageTiming(msgspec.Struct, frozen=True):
    """Wall-clock milliseconds spent in each of the five stages, and waiting for fresh changes before them."""

    seeds: float
    expansion: float
    graph: float
    clustering: float
    rerank: float
    # The daemon's wait for changes it knew of to reach the index (`fresh_wait`), not a stage.
    fresh: float = 0.0


class SearchResponse(msgspec.Struct, frozen=True):
    """What a search answers; `root` is the absolute root the file paths are relative to."""

    query_id: str
    execution_time_ms: float
    timing: StageTiming
    degraded: bool
    warnings: list[str]
    results: list[ClusterResult]
    ranked_symbols: list[SymbolResult]
    root: str
    # The share of the root's indexable files the index held when the search ran: below 1.0
    # while the root is being indexed (the answer covers the files indexed so far).
    coverage: float = 1.0


# -- roots ---------------------------------------------------------------------------------------------

T = TypeVar("T")


def _containing(path: Path, roots: Collection[Path]) -> Path | None:
    """The deepest root that is path or one of its parents."""
    best: Path | None = None
    for root in roots:
        if (path == root or root in path.parents) and (best is None or len(root.parts) > len(best.parts)):
            best = root
    return best


def select_root(requested: str | None, indexed: Mapping[Path, T], *, pending: Collection[Path] = ()) -> tuple[Path, T]:
    """The (root, index) a request asks for.

    `indexed` maps resolved roots to something searchable (still-indexing roots included:
    they answer with what they have); `pending` holds roots known to the daemon whose
    index has nothing yet. A request root inside an indexed root selects that root.
    """
    if requested is None:
        if len(indexed) == 1:
            return next(iter(indexed.items()))
        if not indexed:
            if pending:
                raise RootNotReady("root", f"{sorted(map(str, pending))[0]} is not indexed yet; try again shortly")
            raise UnknownRoot("root", "no root is indexed; run `lensmux index <dir>` first")
        names = ", ".join(sorted(str(r) for r in indexed))
        raise BadSearchRequest("root", f"several roots are indexed ({names}); say which one")
    path = Path(requested).expanduser()
    if not path.is_absolute():
        raise BadSearchRequest("root", f"must be an absolute path, got {requested!r}")
    path = path.resolve()
    root = _containing(path, indexed)
    if root is not None:
        return root, indexed[root]
    if _containing(path, [Path(p).resolve() for p in pending]) is not None:
        raise RootNotReady("root", f"{path} is not indexed yet; try again shortly")
    raise UnknownRoot("root", f"{path} is not under any indexed root")
