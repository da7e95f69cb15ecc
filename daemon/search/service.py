"""`lensmux/hybridSearch`: one request shape for the control socket, HTTP and the CLI.

The engine runs with `[daemon.search]` applied over its own defaults: the fusion weights are
the engine's (graph/search/config.py), the expansion settings the table's own defaults
(daemon/config.py); both are what docs/benchmarks.md measured.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import msgspec
from msgspec import UnsetType

from lensmux.daemon.config import HybridSearchConfig
from lensmux.daemon.control import ControlError
from lensmux.daemon.search.errors import IndexServiceError
from lensmux.daemon.search.gateway import DaemonGateway
from lensmux.daemon.search.index_inputs import focus_param
from lensmux.daemon.search.indexing import IndexService
from lensmux.daemon.search.root_index import RootIndex
from lensmux.daemon.wire.envelope import ErrorCode
from lensmux.graph.index.errors import IndexStoreError, StoreUnreachable
from lensmux.graph.search import (
    HybridSearchEngine,
    SearchConfig,
    SearchError,
    SearchFailed,
    assemble_context,
    parse_request,
    select_root,
)

log = logging.getLogger(__name__)

FORMATS = ("markdown", "xml", "plain")
# `[daemon.search]` keys whose engine field has a unit suffix.
_ENGINE_NAMES = {"request_timeout": "request_timeout_s", "expansion_budget": "expansion_budget_s",
                 "anchor_timeout": "anchor_timeout_s", "learn_quiet": "learn_quiet_s",
                 "learn_quiet_max": "learn_quiet_max_s", "fresh_wait": "fresh_wait_s"}  # fmt: skip


def _given(table: msgspec.Struct) -> dict[str, Any]:
    """The fields of a config table that the file set (nested tables left out)."""
    out: dict[str, Any] = {}
    for name in table.__struct_fields__:
        value = getattr(table, name)
        if not isinstance(value, UnsetType | msgspec.Struct):
            out[_ENGINE_NAMES.get(name, name)] = value
    return out


def engine_config(table: HybridSearchConfig) -> SearchConfig:
    """The engine's SearchConfig: its defaults with what `[daemon.search]` sets."""
    base = SearchConfig()
    return dataclasses.replace(
        base,
        **_given(table),
        fusion=dataclasses.replace(base.fusion, **_given(table.fusion)),
        weights=dataclasses.replace(base.weights, **_given(table.weights)),
    )


def _control_error(exc: SearchError) -> ControlError:
    """A search error as the JSON-RPC error (and HTTP status) the caller gets."""
    status = getattr(exc, "http_status", 500 if isinstance(exc, SearchFailed) else 400)
    code = getattr(exc, "rpc_code", ErrorCode.INVALID_PARAMS if status < 500 else ErrorCode.INTERNAL_ERROR)
    data = exc.as_dict() if hasattr(exc, "as_dict") else {"reason": str(exc)}
    return ControlError(code, str(exc), {**data, "http_status": status})


def _context_options(params: dict[str, Any]) -> tuple[str, int] | None:
    """Pop the optional `context` member: {"format": ..., "budget_tokens": N}."""
    options = params.pop("context", None)
    if options is None:
        return None
    if not isinstance(options, dict):
        raise ControlError(ErrorCode.INVALID_PARAMS, "context must be an object", {"http_status": 400})
    fmt = options.get("format", "markdown")
    budget = options.get("budget_tokens", 4000)
    if fmt not in FORMATS:
        raise ControlError(ErrorCode.INVALID_PARAMS, f"context.format must be one of {FORMATS}", {"http_status": 400})
    if not isinstance(budget, int) or isinstance(budget, bool) or not 1 <= budget <= 1_000_000:
        raise ControlError(
            ErrorCode.INVALID_PARAMS, "context.budget_tokens must be an integer from 1 to 1000000", {"http_status": 400}
        )
    return fmt, budget


def _unsettled_warning(files: list[str], waited: float) -> str:
    """The warning of a search that answered before recent changes were indexed."""
    named = ", ".join(files[:3]) + (f" and {len(files) - 3} more" if len(files) > 3 else "")
    return f"changes to {named} were still being indexed after {waited:g} s; results may not include them"


def _team_lost(exc: SearchError) -> StoreUnreachable | None:
    cause = exc.__cause__
    return cause if isinstance(cause, StoreUnreachable) else None


class SearchService:
    """Resolves the root, runs the engine, optionally assembles context."""

    def __init__(self, indexes: IndexService, gateway: DaemonGateway, config: HybridSearchConfig | None = None) -> None:
        self._indexes = indexes
        if config is None:
            # The daemon builds this service with the IndexService's DaemonConfig in hand;
            # until it passes `config.daemon.search` itself, read the table from there.
            daemon_config = getattr(indexes, "_config", None)
            config = getattr(daemon_config, "search", None) or HybridSearchConfig()
        self._engine = HybridSearchEngine(gateway, config=engine_config(config))
        self.active = 0

    @property
    def config(self) -> SearchConfig:
        """The engine's configuration as `[daemon.search]` set it."""
        return self._engine.config

    def configure(self, config: HybridSearchConfig) -> None:
        """Apply a reloaded `[daemon.search]` table to the next searches."""
        self._engine.config = engine_config(config)

    async def _search(self, request: Any, entry: RootIndex) -> Any:
        """The engine's answer from the root's index; the local one alone if the team store fails meanwhile."""
        # A root overlaying a team snapshot is complete once its local run is: the rest is shared.
        coverage = round(entry.indexer.progress.coverage(), 4)
        index = entry.search_index()
        try:
            if entry.shared is not None:
                # Which files answer locally changes with every write; reading it asks both stores.
                await anyio.to_thread.run_sync(entry.shared.reader.refresh)
            return await self._engine.search(
                request,
                index,
                indexing_in_progress=entry.running,
                coverage=coverage,
                asked_live=entry.learn_first.extend,
            )
        except IndexStoreError as exc:
            if not isinstance(exc, StoreUnreachable) or entry.shared is None:
                raise
            self._indexes.drop_shared(entry, str(exc))
        except SearchFailed as exc:
            lost = _team_lost(exc)
            if lost is None or entry.shared is None:
                raise
            self._indexes.drop_shared(entry, str(lost))
        return await self._engine.search(request, entry.indexer, indexing_in_progress=True, coverage=coverage)

    async def hybrid_search(self, params: Any) -> Any:
        """The control method."""
        if not isinstance(params, dict):
            raise ControlError(ErrorCode.INVALID_PARAMS, "params must be a JSON object", {"http_status": 400})
        params = dict(params)
        context = _context_options(params)
        try:
            # The directory the search ran from (the CLI's working directory); else a root below the index's.
            directory = focus_param(params.pop("focus", None))
        except IndexServiceError as exc:
            raise ControlError(ErrorCode.INVALID_PARAMS, str(exc), {"http_status": 400}) from None
        try:
            request = parse_request(params)
            indexed = {
                root: entry
                for root, entry in self._indexes.roots.items()
                if entry.shared is not None or entry.indexer.status().chunks
            }
            pending = [root for root in self._indexes.roots if root not in indexed]
            _root, entry = select_root(request.root, indexed, pending=pending)
        except SearchError as exc:
            raise _control_error(exc) from None
        if directory is None and request.root is not None:
            directory = Path(await (await anyio.Path(request.root).expanduser()).resolve())
        # A root still being indexed answers from what is indexed, and indexes where the search ran next.
        self._indexes.refocus(entry, directory)
        try:
            embedder = await self._indexes.embedder()
            self._engine.embed_query = embedder.embed_query
        except IndexServiceError as exc:
            log.warning("search without vectors: %s", exc)
            self._engine.embed_query = None
            embedder = None
        self.active += 1
        try:
            settling = time.perf_counter()
            unsettled = await self._indexes.settle(entry, self.config.fresh_wait_s)
            waited = time.perf_counter() - settling
            response = await self._search(request, entry)
        except SearchError as exc:
            raise _control_error(exc) from None
        finally:
            self.active -= 1
        out: dict[str, Any] = msgspec.to_builtins(response)
        # Which commit the team's part of the answer came from (null: the local index alone).
        out["shared"] = entry.shared.describe() if entry.shared is not None else None
        if entry.team_warning:
            out["warnings"].insert(0, entry.team_warning)
        out["timing"]["fresh"] = round(waited * 1000, 2)
        if unsettled:
            out["warnings"].insert(0, _unsettled_warning(unsettled, self.config.fresh_wait_s))
        if context is not None:
            fmt, budget = context
            count = embedder.count_tokens if embedder is not None else (lambda text: max(1, len(text) // 4))
            assembled = await anyio.to_thread.run_sync(
                lambda: assemble_context(response.ranked_symbols, budget_tokens=budget, count_tokens=count, fmt=fmt)  # type: ignore[arg-type]
            )
            out["context"] = msgspec.to_builtins(assembled)
        return out
