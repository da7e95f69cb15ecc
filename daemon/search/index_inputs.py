"""What indexing takes from the daemon: its caps and model, symbols from its instances, where the user is.

graph/index asks a SymbolSource for each file's symbols, and orders a full run by a Focus
(graph/index/builder/runs/order.py: editors' open files, then the directory a search ran from, then
git's recent files, then the rest). The daemon answers both from its instances: documentSymbol
through the same server processes editors use, and the documents clients hold open there.
The directory comes from the request: `focus` on `lensmux/index` and `lensmux/hybridSearch`
(the CLI sends its working directory), or a search `root` below the indexed root.
"""

from __future__ import annotations

import hashlib
import logging
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import anyio.to_thread

from lensmux.daemon.config import DaemonConfig
from lensmux.daemon.mux.errors import InstanceError
from lensmux.daemon.mux.internal_client import InternalClient
from lensmux.daemon.paths import uri_to_path
from lensmux.daemon.search.errors import IndexServiceError
from lensmux.graph.index import ChunkConfig, HnswParams, IndexConfig
from lensmux.graph.index.builder.caches.symbol_cache import SymbolCache
from lensmux.graph.index.builder.preparing.chunking import CHUNK_TEXT_VERSION
from lensmux.graph.index.builder.runs.order import FaultHold, Focus

if TYPE_CHECKING:
    from lensmux.daemon.mux.instance import Instance

log = logging.getLogger(__name__)

# Fault injection for integration tests: "N:PATH" makes every full run prepare N files,
# then no more while PATH exists (graph/index/builder/runs/order.py, FaultHold). Never set otherwise.
FAULT_HOLD_ENV = "LENSMUX_FAULT_INDEX_HOLD"
# How long a symbol source waits for a server to start before it asks without the cache.
READY_WAIT_S = 60.0
# How old a check of the disk may be for a cache lookup; one to store an answer must begin after it came.
LOOKUP_CHECK_AGE_S = 1.0


class LspSymbolSource:
    """documentSymbol through the daemon's instance for the file's language, or the user's symbol cache.

    Where the server's adapter names what its answer depends on beside the text
    (`Adapter.symbols_by_text`: pyright, clangd), an answer some root already got for the same
    text is taken from the cache (graph/index/builder/caches/symbol_cache.py) and the server is not asked.
    """

    def __init__(self, internal: InternalClient, root: Path, cache: SymbolCache | None = None) -> None:
        self._internal = internal
        self._root = root
        self._cache = cache

    async def document_symbols(self, path: Path, language_id: str, text: str) -> list[dict[str, Any]] | None:
        """The server's symbols, None when no configured server covers the file."""
        instance = self._internal.instance_for(path, self._root)
        if instance is None or (instance.stopped and instance.failure is not None):
            return None
        key = await self._cache_key(instance, path, text)
        if key is not None and self._cache is not None:
            cached = await anyio.to_thread.run_sync(self._cache.get, key)
            if isinstance(cached, list):
                return cached
        uri = path.as_uri()
        started = time.perf_counter()
        try:
            async with self._internal.using(instance, path, text):
                asked = instance.documents.get(uri)
                version = asked.version if asked is not None and asked.text == text else None
                result = await instance.request("textDocument/documentSymbol", {"textDocument": {"uri": uri}})
                # pyright parsed and bound the file for it and keeps that: the bind walk skips it.
                instance.warmup.bind_walk.answered(uri)
                answered = instance.documents.get(uri)
                # An editor holding the file with other text is what the server answered about.
                same_text = (
                    version is not None
                    and answered is not None
                    and (answered.version, answered.text) == (version, text)
                )
            log.debug("documentSymbol of %s answered in %.0f ms", path.name, (time.perf_counter() - started) * 1000)
        except InstanceError as exc:
            raise IndexServiceError(str(exc)) from exc
        finally:
            # pyright type-checks open documents in the background: measured on
            # rich, closing right away cut its CPU for a full index by ~60%.
            await self._internal.release(instance, uri)
        answered_at = time.monotonic()
        answer = result if isinstance(result, list) else []
        # Stored only if the server answered about this text and still runs as the key says (not
        # restarted, configuration not reloaded meanwhile), and only hierarchical symbols: flat
        # ones carry the file's URI.
        flat = any(isinstance(item, dict) and "location" in item for item in answer)
        if (
            key is not None
            and self._cache is not None
            and same_text
            and not flat
            and key == await self._key_now(instance, path, text, answered_at)
        ):
            await anyio.to_thread.run_sync(self._cache.put, key, answer)
        return answer

    async def _cache_key(self, instance: Instance, path: Path, text: str) -> bytes | None:
        """The cache key of this text at this server, once the server has started and discovered its root."""
        if self._cache is None:
            return None
        if not await instance.wait_ready(READY_WAIT_S):
            return None
        # pyright logs its configuration before the end of its discovery (adapters/pyright/pyright_symbols.py).
        await instance.warmup.discovery.wait("textDocument/documentSymbol")
        return await self._key_now(instance, path, text, time.monotonic() - LOOKUP_CHECK_AGE_S)

    @staticmethod
    async def _key_now(instance: Instance, path: Path, text: str, since: float) -> bytes | None:
        """The key as the disk was at or after `since` (adapters check what they read from it)."""
        adapter = instance.adapter
        await anyio.to_thread.run_sync(adapter.refresh_symbols_by_text, instance.key.root, since)
        if adapter.symbols_read_open_documents:
            uri = path.as_uri()
            others = [(d.uri, d.text) for d in instance.documents.all() if d.uri != uri and d.pristine_epoch is None]
            unsaved: bool = bool(others) and await anyio.to_thread.run_sync(_unsaved, others)
            if unsaved:
                return None
        environment = adapter.symbols_by_text(path, text)
        if environment is None:
            return None
        digest = hashlib.sha256(environment.encode())
        digest.update(hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest())
        return digest.digest()


def _unsaved(documents: list[tuple[str, str]]) -> bool:
    """Whether any of these open documents (URI, text) holds text the disk does not."""
    for uri, text in documents:
        path = uri_to_path(uri)
        try:
            if path is None or path.read_text(encoding="utf-8") != text:
                return True
        except (OSError, UnicodeDecodeError):
            return True
    return False


def focus_param(value: Any) -> Path | None:
    """The `focus` member of a request (an absolute path: the directory a command ran from), or None."""
    if value is None:
        return None
    if not isinstance(value, str) or not value or not os.path.isabs(value):
        raise IndexServiceError(f"focus must be an absolute path, got {value!r}")
    return Path(os.path.normpath(value))


def focus_of(root: Path, internal: InternalClient, directory: Path | None) -> Focus:
    """The documents editors hold open under `root`, and `directory` when it is below `root`."""
    open_files = set()
    for uri in internal.editor_documents():
        path = uri_to_path(uri)
        if path is not None and path.is_relative_to(root):
            open_files.add(path.relative_to(root).as_posix())
    directories = set()
    if directory is not None and directory != root and directory.is_relative_to(root):
        directories.add(directory.relative_to(root).as_posix())
    return Focus(frozenset(open_files), frozenset(directories))


def fault_hold_from_env() -> FaultHold | None:
    """The test-only hold of LENSMUX_FAULT_INDEX_HOLD, if set."""
    value = os.environ.get(FAULT_HOLD_ENV)
    if not value:
        return None
    count, _, path = value.partition(":")
    log.warning(
        "%s is set: full runs hold after %s files while %s exists (fault injection)", FAULT_HOLD_ENV, count, path
    )
    return FaultHold(Path(path), int(count))


def index_config(config: DaemonConfig) -> IndexConfig:
    """The indexer's tunables with the caps of `[daemon.index]`."""
    caps = config.index
    return IndexConfig(
        chunks=ChunkConfig(max_chunk_tokens=caps.max_chunk_tokens, max_file_chunks=caps.max_file_chunks),
        hnsw=HnswParams(
            m=caps.hnsw_m,
            ef_construction=caps.hnsw_ef_construction,
            ef_search=caps.hnsw_ef_search,
            exact_below=caps.exact_search_below,
        ),
        max_file_bytes=caps.max_file_kb * 1024,
        compact_fraction=caps.compact_fraction,
        save_growth=caps.vector_save_growth,
        keyword_optimize_share=caps.keyword_optimize_share,
        commit_files=caps.commit_files,
        commit_chunks=caps.commit_chunks,
        fault_hold=fault_hold_from_env(),
    )


def model_id(embedder: Any) -> str:
    """The model and how it was built: vectors of another build are not comparable, so they start over."""
    info = embedder.info()
    if info.manifest is None:
        return f"{info.name} chunks {CHUNK_TEXT_VERSION}"
    return f"{info.name} {info.precision} builder {info.manifest.builder_version} chunks {CHUNK_TEXT_VERSION}"
