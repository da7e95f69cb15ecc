"""The server's dynamic registrations, and which of them each client was given.

The server registers with the daemon (which declared dynamic registration for
what needs it, adapters/capabilities.py); each client gets exactly the
registrations it declared `dynamicRegistration` for, under the server's ids,
and only unregistrations of ids it was given. What a client cannot register
the daemon serves itself where the server depends on it (watched files:
watched_files.py). A restarted server starts from nothing: the clients see the
old registrations withdrawn and the new server's ones registered.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from lensmux.daemon.mux.clients.client_caps import declared, registers_dynamically
from lensmux.daemon.mux.diagnostics.diagnostics import pull_registration

if TYPE_CHECKING:
    from lensmux.daemon.mux.clients.client_session import ClientSession
    from lensmux.daemon.mux.instance import Instance

log = logging.getLogger(__name__)

WATCHED_FILES = "workspace/didChangeWatchedFiles"
_RELATIVE_PATTERNS = "workspace.didChangeWatchedFiles.relativePatternSupport"
# The id of the pull-diagnostics registration the daemon makes itself (it serves those pulls).
PULL_REGISTRATION_ID = "lensmux-pull-diagnostics"
# Served by the daemon itself (diagnostics_pull.py): never handed to a client.
_DAEMON_SERVED = frozenset({"textDocument/diagnostic", "workspace/diagnostic"})


@dataclass
class RegistrationTable:
    """Registrations as the server intends them, and the ids each client holds."""

    server: dict[str, dict[str, Any]] = field(default_factory=dict)
    given: dict[int, set[str]] = field(default_factory=dict)

    def of_method(self, method: str) -> list[dict[str, Any]]:
        """The server's live registrations of `method`."""
        return [r for r in self.server.values() if r.get("method") == method]

    def client_has(self, client_id: int, method: str) -> bool:
        """Whether the client holds some registration of `method`."""
        ids = self.given.get(client_id, set())
        return any(self.server.get(i, {}).get("method") == method for i in ids)


def _wants(client: ClientSession, reg: dict[str, Any]) -> bool:
    method = reg.get("method")
    if not isinstance(method, str) or method in _DAEMON_SERVED:
        return False
    return registers_dynamically(client.capabilities, method)


def _for_client(client: ClientSession, reg: dict[str, Any]) -> dict[str, Any] | None:
    """The registration as the server alone would have made it for this client (None: not at all)."""
    if reg.get("method") != WATCHED_FILES or declared(client.capabilities, _RELATIVE_PATTERNS) is True:
        return reg
    options = reg.get("registerOptions")
    if not isinstance(options, dict) or not isinstance(watchers := options.get("watchers"), list):
        return reg
    # The server was told the daemon takes RelativePatterns and watches library folders with
    # them; told otherwise, it leaves those out (pyright), so this client gets the plain globs.
    plain = [w for w in watchers if isinstance(w, dict) and isinstance(w.get("globPattern"), str)]
    if len(plain) == len(watchers):
        return reg
    if not plain:
        return None
    return {**reg, "registerOptions": {**options, "watchers": plain}}


def _give(client: ClientSession, table: RegistrationTable, regs: list[dict[str, Any]]) -> None:
    held = table.given.setdefault(client.id, set())
    fresh = []
    for reg in regs:
        shaped = _for_client(client, reg) if str(reg["id"]) not in held and _wants(client, reg) else None
        if shaped is not None:
            fresh.append(shaped)
    if fresh:
        held.update(str(r["id"]) for r in fresh)
        client.request("client/registerCapability", {"registrations": fresh})


def register(instance: Instance, params: Any) -> None:
    """The server registered capabilities: record them, give each client what it declared."""
    regs = params.get("registrations", []) if isinstance(params, dict) else []
    table = instance.registrations
    added = []
    for reg in regs:
        if not isinstance(reg, dict) or "id" not in reg or not isinstance(reg.get("method"), str):
            log.info("%s: malformed registration ignored: %.200r", instance.name, reg)
            continue
        table.server[str(reg["id"])] = reg
        added.append(reg)
    for client in _initialized(instance):
        _give(client, table, added)


def unregister(instance: Instance, params: Any) -> None:
    """The server unregistered: withdraw those ids from the clients that hold them."""
    # The LSP spells it "unregisterations".
    items = params.get("unregisterations", []) if isinstance(params, dict) else []
    table = instance.registrations
    ids = set()
    for item in items:
        if isinstance(item, dict) and "id" in item:
            ids.add(str(item["id"]))
    _withdraw(instance, ids)
    for reg_id in ids:
        table.server.pop(reg_id, None)


def _withdraw(instance: Instance, ids: set[str]) -> None:
    table = instance.registrations
    for client in list(instance.clients.values()):
        held = table.given.get(client.id, set())
        gone = sorted(held & ids)
        if not gone:
            continue
        held.difference_update(gone)
        items = [{"id": i, "method": table.server.get(i, {}).get("method", "")} for i in gone]
        client.request("client/unregisterCapability", {"unregisterations": items})


def replay(instance: Instance, client: ClientSession) -> None:
    """A client finished initializing: give it the live registrations it declared, and its pull registration."""
    _give(client, instance.registrations, list(instance.registrations.server.values()))
    options = pull_registration(instance, client)
    if options is not None:
        # The server alone would register pull diagnostics for this client; the daemon serves them.
        pull = {"id": PULL_REGISTRATION_ID, "method": "textDocument/diagnostic", "registerOptions": options}
        client.request("client/registerCapability", {"registrations": [pull]})


def forget_client(instance: Instance, client_id: int) -> None:
    """A client left."""
    instance.registrations.given.pop(client_id, None)


def server_restarted(instance: Instance) -> None:
    """The server process is gone: its registrations went with it, so the clients drop theirs."""
    _withdraw(instance, set(instance.registrations.server))
    instance.registrations.server.clear()


def _initialized(instance: Instance) -> list[ClientSession]:
    return [c for c in instance.clients.values() if c.initialized]


def some_client_watches_files(instance: Instance) -> bool:
    """Whether a connected client holds the server's watched-files registration (and sends events)."""
    table = instance.registrations
    return any(table.client_has(cid, WATCHED_FILES) for cid in instance.clients)
