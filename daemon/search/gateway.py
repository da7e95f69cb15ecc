"""The search's view of the language servers: the daemon's instances, asked as the daemon.

Every question goes through `Instance.request`, so searches share the
response cache, breakers and timeouts with editors; documents a question
names are opened first (clangd answers only for files it has open), except
a file of the server's own sources at a server that reads unopened files from
disk (the adapter's `opening_saved_files_changes_answers` is False: pyright, whose
bind walk lists its sources, bind_walk.py). There opening the file only makes the
server check all of it, in the thread that answers: 20 functions of the 100k-line
monorepo cost pyright 5.0 s of CPU with their files opened, 1.8-3.5 s without, for the
same answers (docs/benchmarks.md, "Warm search on a root not learned yet"). A file
outside its sources is answered only once opened, and is opened.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import msgspec

from lensmux.adapters.base import find_executable
from lensmux.adapters.spec import ServerConfig
from lensmux.daemon.mux.errors import InstanceError, ServerRequestFailed
from lensmux.daemon.mux.instance import Instance
from lensmux.daemon.mux.internal_client import InternalClient, default_initialize_params
from lensmux.daemon.mux.registry import InstanceRegistry
from lensmux.daemon.paths import uri_to_path
from lensmux.graph.search import GatewayError, NoServer

log = logging.getLogger(__name__)


def _uris(params: Mapping[str, Any]) -> Iterator[str]:
    doc = params.get("textDocument")
    if isinstance(doc, Mapping) and isinstance(doc.get("uri"), str):
        yield doc["uri"]
    item = params.get("item")
    if isinstance(item, Mapping) and isinstance(item.get("uri"), str):
        yield item["uri"]


class DaemonGateway:
    """LspGateway over the daemon's instances."""

    def __init__(self, registry: InstanceRegistry, internal: InternalClient, *, background: bool = False) -> None:
        self._registry = registry
        self._internal = internal
        self._background = background

    def in_background(self) -> DaemonGateway:
        """The same gateway for the learner: each request holds its instance's own-request slot (own_slot.py).

        A search, an index run or an assistant tool asks on a user's behalf and never waits for it.
        """
        return DaemonGateway(self._registry, self._internal, background=True)

    def _server(self, language: str) -> ServerConfig | None:
        for cfg in self._registry.config.enabled_servers().values():
            if language in cfg.languages:
                return cfg
        return None

    def unavailable_reason(self, root: Path, language: str) -> str | None:
        """None when a server may be asked; else why not."""
        cfg = self._server(language)
        if cfg is None:
            return NoServer(f"no language server configured for {language}")
        if find_executable(cfg.command) is None:
            return f"{cfg.name} is not installed ({cfg.command} not found)"
        inst = self._existing(cfg, root)
        if inst is not None:
            if inst.failure is not None:
                return f"{inst.name}: {inst.failure}"
            if not inst.breaker.ready_for_restart() or inst.breaker.state.value == "open":
                return inst.breaker.rejection()
        return None

    def _existing(self, cfg: ServerConfig, root: Path) -> Instance | None:
        """The running instance of cfg's server for root, without starting one."""
        return self._registry.find(cfg.name, self._registry.key_for(cfg.name, root).root)

    def _instance(self, root: Path, language: str) -> Instance:
        cfg = self._server(language)
        if cfg is None:
            raise GatewayError(f"no language server configured for {language}")
        return self._registry.ensure_instance(cfg.name, root, default_initialize_params)

    async def capabilities(self, root: Path, language: str) -> Mapping[str, Any]:
        """The server's capabilities, starting it if needed."""
        inst = self._instance(root, language)
        if not await inst.wait_ready(inst.config.timeouts.default):
            raise GatewayError(f"{inst.name} is not running ({inst.failure or inst.state})")
        assert inst.init_result is not None
        result = msgspec.json.decode(inst.init_result)
        caps = result.get("capabilities") if isinstance(result, dict) else None
        return caps if isinstance(caps, dict) else {}

    def answers_settled(self, root: Path, language: str) -> bool:
        """Whether the server has discovered the workspace, so its cross-file answers are complete."""
        cfg = self._server(language)
        if cfg is None:
            return False
        inst = self._existing(cfg, root)
        return inst is not None and inst.ready and not inst.warmup.busy()

    def server_languages(self) -> list[tuple[str, ...]]:
        """The languages of each enabled server (a language goes to the first that has it, as `_server`)."""
        seen: set[str] = set()
        out: list[tuple[str, ...]] = []
        for cfg in self._registry.config.enabled_servers().values():
            languages = tuple(sorted(set(cfg.languages) - seen))
            seen.update(languages)
            if languages:
                out.append(languages)
        return out

    def quiet(self, seconds: float) -> bool:
        """No client has sent anything to any server, nor changed a source file on disk, for `seconds`,
        and every running server is settled."""
        return self.noise(seconds) is None

    def noise(self, seconds: float) -> str | None:
        """Why the servers are not quiet for `seconds` (None: they are), as `lensmux status` shows it."""
        for inst in self._registry.instances():
            activity = inst.activity_within(seconds)
            if activity is not None:
                return f"{activity} ({inst.key.server})"
            if inst.ready and inst.warmup.busy():
                return f"{inst.key.server} is still reading its workspace"
        return None

    async def release_documents(self) -> int:
        """Close the documents searches and learning kept open: servers keep analysing open files."""
        return await self._internal.release_kept()

    async def request(
        self, root: Path, language: str, method: str, params: Mapping[str, Any], *, timeout: float
    ) -> Any:
        """One request through the instance; GatewayError on any failure."""
        inst = self._instance(root, language)
        try:
            if not await inst.wait_ready(timeout):
                raise GatewayError(f"{inst.name} is not running ({inst.failure or inst.state})")
            uris = list(_uris(params))
            if not inst.adapter.opening_saved_files_changes_answers:
                # Its sources answer unopened as opened; opening one only adds a check of the whole file.
                sources = inst.warmup.bind_walk.sources
                uris = [uri for uri in uris if uri not in sources]
            async with AsyncExitStack() as held:
                for uri in uris:
                    path = uri_to_path(uri)
                    if path is not None:
                        await held.enter_async_context(self._internal.using(inst, path))
                if not self._background:
                    return await inst.request(method, dict(params), timeout)
                async with inst.own_slot.held(inst.pending):
                    return await inst.request(method, dict(params), timeout, background=True)
        except ServerRequestFailed as exc:
            # The code lets the search tell "method not supported" from a failure.
            raise GatewayError(str(exc), code=exc.code) from exc
        except InstanceError as exc:
            raise GatewayError(str(exc)) from exc
        except OSError as exc:
            raise GatewayError(f"{method}: {exc}") from exc
