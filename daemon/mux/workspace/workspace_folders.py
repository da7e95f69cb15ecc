"""Workspace folders clients add to a shared server, reference-counted per client.

An instance is started for one root, and the server's first workspace folder
is that root. A client may name more folders, in `initialize` or later with
`workspace/didChangeWorkspaceFolders`. A folder inside the root adds nothing
(the server already covers it). Any other folder is forwarded once, when the
first client adds it, and removed from the server when the last client that
added it removes it or leaves; after a restart the server gets the folders
still held. The server's view of the workspace grows for every client of the
instance: that is shared on purpose (docs/sharing.md), the alternative being
a second server process for the same root.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lensmux.daemon.mux.errors import ServerUnavailable
from lensmux.daemon.paths import uri_to_path

if TYPE_CHECKING:
    from lensmux.daemon.mux.instance import Instance

log = logging.getLogger(__name__)

METHOD = "workspace/didChangeWorkspaceFolders"


class WorkspaceFolders:
    """The folders beyond the root that clients hold, and which clients hold each."""

    def __init__(self, root: Path, *, covers_root: bool = True) -> None:
        self.root = root
        # False for a server started with no workspace folder (registry.root_hint): the root is
        # only where it runs, and no folder is covered by it.
        self.covers_root = covers_root
        self._holders: dict[str, set[int]] = {}
        self._folders: dict[str, dict[str, Any]] = {}

    def _covered(self, uri: str) -> bool:
        path = uri_to_path(uri)
        if path is None or not self.covers_root:
            return False
        path = path.resolve()
        return path == self.root or self.root in path.parents

    def add(self, client_id: int, folders: Any) -> list[dict[str, Any]]:
        """Record folders a client added; return those the server must now be told of."""
        fresh: list[dict[str, Any]] = []
        for folder in _valid(folders):
            uri = folder["uri"]
            if self._covered(uri):
                continue
            holders = self._holders.setdefault(uri, set())
            if not holders:
                self._folders[uri] = {"uri": uri, "name": str(folder.get("name") or uri.rsplit("/", 1)[-1])}
                fresh.append(self._folders[uri])
            holders.add(client_id)
        return fresh

    def remove(self, client_id: int, folders: Any) -> list[dict[str, Any]]:
        """Record folders a client removed; return those no client holds any more."""
        gone: list[dict[str, Any]] = []
        for folder in _valid(folders):
            holders = self._holders.get(folder["uri"])
            if holders is None or client_id not in holders:
                continue
            holders.discard(client_id)
            if not holders:
                del self._holders[folder["uri"]]
                gone.append(self._folders.pop(folder["uri"]))
        return gone

    def drop_client(self, client_id: int) -> list[dict[str, Any]]:
        """A client left: the folders only it held."""
        return self.remove(client_id, [f for uri, f in self._folders.items() if client_id in self._holders[uri]])

    def extra(self) -> list[dict[str, Any]]:
        """Every folder beyond the root that some client holds."""
        return list(self._folders.values())

    def all(self) -> list[dict[str, Any]] | None:
        """The server's workspace folders: the root, then the extra ones (None: no workspace at all)."""
        root = [{"uri": self.root.as_uri(), "name": self.root.name or str(self.root)}] if self.covers_root else []
        folders = [*root, *self.extra()]
        return folders if folders or self.covers_root else None


def _valid(folders: Any) -> list[dict[str, Any]]:
    if not isinstance(folders, list):
        return []
    return [f for f in folders if isinstance(f, dict) and isinstance(f.get("uri"), str)]


async def client_changed(instance: Instance, client_id: int, name: str, params: Any) -> None:
    """A client's `workspace/didChangeWorkspaceFolders`: forward what changes the server's set."""
    event = params.get("event") if isinstance(params, dict) else None
    if not isinstance(event, dict):
        log.info("%s: %s from %s without an event ignored", instance.name, METHOD, name)
        return
    removed = instance.folders.remove(client_id, event.get("removed"))
    added = instance.folders.add(client_id, event.get("added"))
    await _tell_server(instance, added, removed)


async def client_initialized(instance: Instance, client_id: int, params: dict[str, Any]) -> None:
    """A client's initialize named folders: the ones beyond the root are added for it."""
    await _tell_server(instance, instance.folders.add(client_id, params.get("workspaceFolders")), [])


async def client_left(instance: Instance, client_id: int) -> None:
    """Remove the folders only the leaving client held."""
    await _tell_server(instance, [], instance.folders.drop_client(client_id))


async def replay(instance: Instance) -> None:
    """After (re)initialization: the server starts with the root only; add the others."""
    await _tell_server(instance, instance.folders.extra(), [])


async def _tell_server(instance: Instance, added: list[dict[str, Any]], removed: list[dict[str, Any]]) -> None:
    if not added and not removed:
        return
    log.info(
        "%s: workspace folders +%s -%s",
        instance.name,
        [f["uri"] for f in added],
        [f["uri"] for f in removed],
    )
    try:
        await instance.notify_server(METHOD, {"event": {"added": added, "removed": removed}})
    except ServerUnavailable:
        # The replay after the restart sends the folders held by then.
        return
    # The server discovers the new folders: nothing it answered before is shared, nor anything
    # it answers before it is done, and what depends on their discovery waits for it.
    instance.warmup.folders_changed([f["uri"] for f in added], [f["uri"] for f in removed])
