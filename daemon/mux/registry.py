"""Instances by key: the first client of a (server, root) starts one, later ones share it."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
from anyio.abc import TaskGroup
from msgspec import Raw

from lensmux.adapters.base import LSP_ROOT_FIELDS
from lensmux.adapters.registry import adapter_for
from lensmux.daemon.config import Config
from lensmux.daemon.mux import joining
from lensmux.daemon.mux.clients.client_session import ClientSession
from lensmux.daemon.mux.instance import Instance, InstanceKey, ServerUnavailable
from lensmux.daemon.paths import uri_to_path

log = logging.getLogger(__name__)


class UnknownRoot(Exception):
    """initialize named no usable local workspace root."""


def root_hint(params: dict[str, Any], fields: tuple[str, ...] = LSP_ROOT_FIELDS) -> tuple[Path, bool]:
    """The directory a client's initialize names as its workspace, and whether the server sees one.

    `fields` are the initialize members the server reads its workspace from, in its order (the
    adapter's `root_fields`). A client that names its directory only in members the server
    ignores (rootUri, for pyright) gets a server without a workspace, as it would alone; that
    directory is still where the server runs.
    """
    for field in fields:
        path = _path_of(params, field)
        if path is not None:
            return path, True
    for field in LSP_ROOT_FIELDS:
        path = _path_of(params, field)
        if path is not None:
            return path, False
    raise UnknownRoot("initialize has no rootUri, workspaceFolders or rootPath with a local path")


def _path_of(params: dict[str, Any], field: str) -> Path | None:
    value = params.get(field)
    if field == "workspaceFolders":
        first = value[0] if isinstance(value, list) and value else None
        value = first.get("uri") if isinstance(first, dict) else None
    if not isinstance(value, str) or not value:
        return None
    return Path(value) if field == "rootPath" else uri_to_path(value)


class InstanceRegistry:
    """Live instances, created on demand inside the daemon's task group."""

    def __init__(self, tg: TaskGroup, config: Config) -> None:
        self._tg = tg
        self.config = config
        self._instances: dict[InstanceKey, Instance] = {}
        self.on_new_instance: list[Callable[[Instance], None]] = []

    def instances(self) -> list[Instance]:
        """Every instance not yet stopped."""
        return [i for i in self._instances.values() if not i.stopped]

    def find(self, server: str, root: Path) -> Instance | None:
        """The live instance of `server` whose workspace root is `root`, in the default language."""
        for inst in self.instances():
            key = inst.key
            if key.server == server and key.root == root and key.workspace and key.language is None:
                return inst
        return None

    def key_for(self, server: str, hint: Path, *, workspace: bool = True, language: str | None = None) -> InstanceKey:
        """The instance a client asking for `hint` shares: the asked root, or the nearest marker above it.

        Servers configured with root markers (clangd) map to the nearest ancestor holding one, since
        their answers were measured not to depend on where below it they start; the others (pyright)
        run on exactly the asked root (docs/sharing.md, "Roots and workspace folders").
        A `language` other than the default one's (Adapter.own_language) is a server of its own.
        """
        cfg = self.config.servers[server]
        if not workspace:
            # No workspace for the server: nothing to map, the directory is only where it runs.
            return InstanceKey(server, cfg.fingerprint(), hint.resolve(), workspace=False, language=language)
        root = adapter_for(cfg).find_root(hint.resolve())
        return InstanceKey(server, cfg.fingerprint(), root, language=language)

    def get_or_create(self, key: InstanceKey) -> Instance:
        """The live instance for `key`, started if there is none."""
        inst = self._instances.get(key)
        if inst is None or inst.stopped:
            cfg = self.config.servers[key.server]
            inst = Instance(key, cfg, adapter_for(cfg), self.config.daemon)
            self._instances[key] = inst
            for hook in self.on_new_instance:
                hook(inst)
            self._tg.start_soon(inst.run_task)
            log.info("new instance %s", inst.name)
        return inst

    def ensure_instance(self, server: str, hint: Path, default_params: Callable[[Path], dict[str, Any]]) -> Instance:
        """The instance for `server` at `hint`'s root, started with daemon-made params if new."""
        key = self.key_for(server, hint)
        inst = self.get_or_create(key)
        inst.ensure_started(default_params(key.root))
        return inst

    async def attach(
        self, server: str, client: ClientSession, params: dict[str, Any], answer: Callable[[Raw], None]
    ) -> Instance:
        """Attach a client by its initialize params; `answer` sends it its InitializeResult."""
        if server not in self.config.servers:
            raise ServerUnavailable(f"server {server!r} is not configured")
        adapter = adapter_for(self.config.servers[server])
        hint, workspace = root_hint(params, adapter.root_fields)
        language = adapter.own_language(params.get("locale"))
        inst = self.get_or_create(self.key_for(server, hint, workspace=workspace, language=language))
        await joining.attach(inst, client, params, answer)
        return inst

    async def shutdown_all(self) -> None:
        """Politely stop every server, in parallel, bounded by the grace period."""
        async with anyio.create_task_group() as tg:
            for inst in self.instances():
                tg.start_soon(self._stop_one, inst)

    @staticmethod
    async def _stop_one(inst: Instance) -> None:
        if inst.ready:
            await inst.shutdown_server()
        inst.stop()
