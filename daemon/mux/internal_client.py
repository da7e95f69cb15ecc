"""The daemon as a client of its own instances, for indexing and search.

It opens documents as the internal holder (never changing a text an editor
has open), keeps a few of them open so repeated questions about one file do
not make the server parse it again, and asks through `Instance.request`, so
its questions share the cache, the breaker and the timeouts with editors'.
"""

from __future__ import annotations

import logging
import os
from collections import Counter, OrderedDict
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio

from lensmux.adapters.capabilities import internal_initialize_params
from lensmux.adapters.spec import ServerConfig
from lensmux.daemon.mux.documents.documents import INTERNAL_HOLDER
from lensmux.daemon.mux.instance import Instance
from lensmux.daemon.mux.registry import InstanceRegistry

log = logging.getLogger(__name__)

# Documents the daemon keeps open per instance; beyond this the oldest is closed.
OPEN_DOCUMENTS_CAP = 32


def default_initialize_params(root: Path) -> dict[str, Any]:
    """The daemon's own `initialize` as a client of an instance.

    The server does not see these capabilities: it is told the daemon's full
    set (adapters/capabilities.py) whoever starts it, so an instance the
    indexer starts serves editors just as well.
    """
    return internal_initialize_params(root.as_uri(), os.getpid())


class InternalClient:
    """Opens documents and sends requests on the daemon's own behalf."""

    def __init__(self, registry: InstanceRegistry) -> None:
        self._registry = registry
        self._open: dict[int, OrderedDict[str, None]] = {}
        # (instance, uri) -> how many of the daemon's own questions are using it now (`using`).
        self._in_use: Counter[tuple[int, str]] = Counter()

    def servers(self) -> list[ServerConfig]:
        """The enabled servers."""
        return list(self._registry.config.enabled_servers().values())

    def existing_instance_for(self, path: Path, root: Path) -> Instance | None:
        """The live instance serving `path` under `root`, without starting one."""
        cfg = self.server_for(path)
        if cfg is None:
            return None
        return self._registry.find(cfg.name, self._registry.key_for(cfg.name, root).root)

    def server_for(self, path: Path) -> ServerConfig | None:
        """The enabled server that handles this file's language, if any."""
        for cfg in self._registry.config.enabled_servers().values():
            if cfg.language_of(path.name):
                return cfg
        return None

    def language_of(self, path: Path) -> str | None:
        """The language id of a file, by the configured servers' extensions."""
        cfg = self.server_for(path)
        return cfg.language_of(path.name) if cfg else None

    def instance_for(self, path: Path, root: Path) -> Instance | None:
        """The instance serving `path` under `root`, started if needed; None if no server covers it."""
        cfg = self.server_for(path)
        if cfg is None:
            return None
        return self._registry.ensure_instance(cfg.name, root, default_initialize_params)

    @asynccontextmanager
    async def using(self, instance: Instance, path: Path, text: str | None = None) -> AsyncIterator[str]:
        """`path` open at the server (as `ensure_open`) and not closed by anyone while the block runs.

        Indexing, searches and learning ask about documents concurrently: the learner
        letting its documents go, or the cap making room, must not close one another
        of them is asking about at that moment (clangd answers a closed document with
        an error, "trying to get AST for non-added document").
        """
        key = (id(instance), path.as_uri())
        # Marked before the first await: nothing may close it while it is being opened either.
        self._in_use[key] += 1
        try:
            yield await self.ensure_open(instance, path, text)
        finally:
            self._in_use[key] -= 1
            if not self._in_use[key]:
                del self._in_use[key]

    async def ensure_open(self, instance: Instance, path: Path, text: str | None = None) -> str:
        """Open `path` at the server (as the daemon) unless it is open already; return its URI."""
        uri = path.as_uri()
        opened = self._open.setdefault(id(instance), OrderedDict())
        if uri in opened:
            opened.move_to_end(uri)
            await self._refresh(instance, path, uri, text)
            return uri
        epoch: int | None = None
        if text is None:
            # Read at this disk epoch: if the file changes later, the epoch moves on.
            epoch = instance.cache.disk_epoch
            text = await anyio.Path(path).read_text(encoding="utf-8", errors="replace")
        language = instance.config.language_of(path.name) or ""
        doc_text = text
        await instance.sync_documents(
            lambda: instance.documents.open_internal(uri, language, doc_text, disk_epoch=epoch)
        )
        opened[uri] = None
        while len(opened) > OPEN_DOCUMENTS_CAP:
            free = next((old for old in opened if (id(instance), old) not in self._in_use), None)
            if free is None:
                break  # every one is being asked about: the cap waits for the next open
            del opened[free]
            await self._close(instance, free)
        return uri

    async def _refresh(self, instance: Instance, path: Path, uri: str, text: str | None) -> None:
        """A document the daemon keeps open follows the file (or `text`), unless an editor holds it.

        Without this the server goes on answering about the text as it was when the
        daemon opened it: a file written since would be indexed with its old symbols.
        """
        doc = instance.documents.get(uri)
        if doc is None or set(doc.holders) != {INTERNAL_HOLDER}:
            return
        epoch: int | None = None
        if text is None:
            if doc.pristine_epoch is not None and doc.pristine_epoch == instance.cache.disk_epoch:
                return  # no file event since it was read
            epoch = instance.cache.disk_epoch
            text = await anyio.Path(path).read_text(encoding="utf-8", errors="replace")
        current = text
        await instance.sync_documents(lambda: instance.documents.refresh_internal(uri, current, disk_epoch=epoch))

    async def release(self, instance: Instance, uri: str) -> bool:
        """Close a document the daemon opened for one question (indexing): servers
        analyse open documents in the background, so keeping it open costs CPU.
        True if the daemon still kept it open."""
        opened = self._open.get(id(instance))
        if opened is None or uri not in opened or (id(instance), uri) in self._in_use:
            # Not kept, or another of the daemon's questions is asking about it: it stays kept.
            return False
        del opened[uri]
        await self._close(instance, uri)
        return True

    async def release_kept(self) -> int:
        """Close every document kept open for searches and learning; how many there were.

        For a moment when nothing of the daemon's own asks about them: one still being
        asked about would be answered from the disk, which is its text anyway.
        """
        closed = 0
        for instance in self._registry.instances():
            for uri in list(self._open.get(id(instance), ())):
                closed += await self.release(instance, uri)
        return closed

    def editor_documents(self) -> list[str]:
        """URIs of the documents clients other than the daemon hold open, in every instance (sorted)."""
        return sorted(
            {
                doc.uri
                for inst in self._registry.instances()
                for doc in inst.documents.all()
                if set(doc.holders) - {INTERNAL_HOLDER}
            }
        )

    async def _close(self, instance: Instance, uri: str) -> None:
        await instance.sync_documents(lambda: instance.documents.close(INTERNAL_HOLDER, uri))

    async def request(self, instance: Instance, method: str, params: dict[str, Any], timeout: float) -> Any:
        """A request through the instance (cache, breaker, timeout)."""
        return await instance.request(method, params, timeout)
