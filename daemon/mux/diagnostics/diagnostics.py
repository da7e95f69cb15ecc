"""Diagnostics: what the server last published per document, and who was shown it.

The server is declared push-only (adapters/capabilities.py), so every
diagnostic arrives as `textDocument/publishDiagnostics`. The daemon keeps the
latest set per URI with its version and a result id, pushes it to push
clients (each in its own version numbering), lets pull clients ask for it
(diagnostics_pull.py), replays it to a client that opens a document someone
else already holds, and clears it for a client that closes one.
"""

from __future__ import annotations

import itertools
import logging
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import anyio
from msgspec import Raw

from lensmux.daemon.mux.clients.client_caps import accepts_refresh, pulls_diagnostics
from lensmux.daemon.mux.diagnostics import diagnostics_pull
from lensmux.daemon.mux.diagnostics.diagnostic_wording import for_client, forget
from lensmux.daemon.wire import envelope as ev

if TYPE_CHECKING:
    from lensmux.daemon.mux.clients.client_session import ClientSession
    from lensmux.daemon.mux.diagnostics.diagnostics_pull import ParkedPull
    from lensmux.daemon.mux.instance import Instance

log = logging.getLogger(__name__)

_PUBLISH = "textDocument/publishDiagnostics"
_REFRESH = "workspace/diagnostic/refresh"


@dataclass(slots=True)
class Published:
    """The latest diagnostics of one URI, as the server published them."""

    uri: str
    version: int | None
    diagnostics: list[Any]
    result_id: str
    # When it arrived (monotonic): servers often publish twice after an open.
    at: float = field(default_factory=time.monotonic)


@dataclass
class DiagnosticsStore:
    """Per-URI latest diagnostics, and per client what it was last shown of each."""

    latest: dict[str, Published] = field(default_factory=dict)
    # uri -> client id -> result id the client was last shown (pushed or pulled).
    shown: dict[str, dict[int, str]] = field(default_factory=dict)
    # uri -> clients that closed it as its last holders: the server's clearing publish is theirs.
    closing: dict[str, set[int]] = field(default_factory=dict)
    # URIs whose diagnostics went to every client (files nobody has open).
    broadcast: set[str] = field(default_factory=set)
    parked: dict[str, list[ParkedPull]] = field(default_factory=dict)
    # client id -> uri -> the client's wording of a diagnostic -> the server's (diagnostic_wording.py).
    worded: dict[int, dict[str, dict[Any, Any]]] = field(default_factory=dict)
    _ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1))
    # Set (and replaced) on every publish, for waiters on the next one.
    changed: anyio.Event = field(default_factory=anyio.Event)
    # uri -> (version sent to the server, when): publishes it owes (diagnostics_nudge.py).
    awaited: dict[str, tuple[int, float]] = field(default_factory=dict)
    awaited_added: anyio.Event = field(default_factory=anyio.Event)
    # (client id, uri) whose question went before its didOpen: its didClose waits for the
    # server's publish after that open (documents/request_first.py).
    request_first: set[tuple[int, str]] = field(default_factory=set)

    def record(self, uri: str, version: int | None, diagnostics: list[Any]) -> tuple[Published, bool]:
        """Keep a publish; return it and whether its diagnostics differ from the previous ones."""
        old = self.latest.get(uri)
        changed = old is None or old.diagnostics != diagnostics
        result_id = f"lensmux-{next(self._ids)}" if changed or old is None else old.result_id
        entry = Published(uri, version, diagnostics, result_id)
        self.latest[uri] = entry
        self.changed.set()
        self.changed = anyio.Event()
        return entry, changed

    def forget_client(self, client_id: int) -> None:
        """A client left: it is shown nothing any more."""
        self.worded.pop(client_id, None)
        for shown in self.shown.values():
            shown.pop(client_id, None)
        for closing in self.closing.values():
            closing.discard(client_id)
        self.request_first = {key for key in self.request_first if key[0] != client_id}
        for uri, pulls in list(self.parked.items()):
            pulls[:] = [p for p in pulls if p.client.id != client_id]
            if not pulls:
                del self.parked[uri]


def pulls(instance: Instance, client: ClientSession) -> bool:
    """Whether `client` is served pull diagnostics rather than pushed ones."""
    return offers_pull_statically(instance, client) or pull_registration(instance, client) is not None


def offers_pull_statically(instance: Instance, client: ClientSession) -> bool:
    """Pull through `diagnosticProvider` in the client's InitializeResult: configured, and declared.

    clangd alone pushes to every editor profile the conformance suite runs, so
    static pull is offered only where `pull_diagnostics` is set.
    """
    return instance.config.pull_diagnostics and pulls_diagnostics(client.capabilities)


def pull_registration(instance: Instance, client: ClientSession) -> dict[str, Any] | None:
    """registerOptions of the pull registration the server alone would make for `client` (pyright), or None."""
    if offers_pull_statically(instance, client):
        return None
    return instance.adapter.pull_diagnostics_registration(client.capabilities, client.initialization_options)


def server_answers_pull(instance: Instance, client: ClientSession, method: str) -> bool:
    """Whether this pull goes to the server itself (it answers pulls while pushing) rather than the store."""
    return (
        method == "textDocument/diagnostic"
        and instance.adapter.answers_pulls_while_pushing
        and pull_registration(instance, client) is not None
    )


def _push_clients(instance: Instance, ids: Any) -> list[ClientSession]:
    out = []
    for cid in ids:
        client = instance.clients.get(cid)
        if client is not None and not pulls(instance, client):
            out.append(client)
    return out


def on_publish(instance: Instance, params: Raw) -> None:
    """Route one publishDiagnostics from the server: push to push clients, wake pull clients."""
    value = ev.decode_value(params)
    if not isinstance(value, dict) or not isinstance(value.get("uri"), str):
        return
    uri: str = value["uri"]
    version = value.get("version") if isinstance(value.get("version"), int) else None
    raw_list = value.get("diagnostics")
    diagnostics: list[Any] = raw_list if isinstance(raw_list, list) else []
    store = instance.diagnostics
    entry, changed = store.record(uri, version, diagnostics)
    holders = [c for c in instance.documents.holders(uri) if c in instance.clients]
    # The clients that closed it as its last holders wait for the server's clearing publish (no
    # version: the document is gone); a check's publish (of a version) already on its way when
    # the didClose went is theirs too, as from the server alone, but not the end of their wait.
    closing = store.closing.pop(uri, set()) if version is None else store.closing.get(uri, set())
    if holders or closing:
        targets = _push_clients(instance, [*holders, *(c for c in closing if c not in holders)])
    elif not diagnostics and uri not in store.broadcast:
        # Clearing diagnostics no client ever saw (a file the daemon opened to index it).
        targets = []
    else:
        # Diagnostics of files nobody has open (workspace-wide analysis) go to every push client.
        targets = _push_clients(instance, list(instance.clients))
        store.broadcast.add(uri)
    log.debug(
        "%s: %d diagnostics for %s v%s, pushed to %d clients",
        instance.name,
        len(diagnostics),
        uri,
        version,
        len(targets),
    )
    for client in targets:
        push(instance, client, entry)
    answered = diagnostics_pull.answer_parked(instance, uri)
    if changed:
        _refresh_pull_clients(instance, uri, entry, answered)


def push(instance: Instance, client: ClientSession, entry: Published) -> None:
    """Send `entry` to one push client, its version mapped to the client's numbering."""
    value: dict[str, Any] = {
        "uri": entry.uri,
        "diagnostics": for_client(instance, client, entry.uri, entry.diagnostics),
    }
    if entry.version is not None:
        mapped = instance.documents.client_version(entry.uri, client.id, entry.version)
        if mapped is not None:
            value["version"] = mapped
    client.send(ev.notification(_PUBLISH, ev.encode_value(value)))
    shown = instance.diagnostics.shown.setdefault(entry.uri, {})
    if entry.diagnostics:
        shown[client.id] = entry.result_id
    else:
        shown.pop(client.id, None)


def _refresh_pull_clients(instance: Instance, uri: str, entry: Published, answered: set[int]) -> None:
    """Tell pull clients that hold `uri` and were shown an older set to pull again."""
    shown = instance.diagnostics.shown.get(uri, {})
    for cid in instance.documents.holders(uri):
        client = instance.clients.get(cid)
        if client is None or cid in answered or not pulls(instance, client):
            continue
        # Only a client that pulled an older set needs telling; one that never pulled will.
        seen = shown.get(cid)
        if seen is None or seen == entry.result_id or not accepts_refresh(client.capabilities, _REFRESH):
            continue
        client.request(_REFRESH, None)


def opened(instance: Instance, client: ClientSession, uri: str, *, shared: bool) -> None:
    """A client opened `uri`; if someone already held it, show the newcomer its current diagnostics."""
    store = instance.diagnostics
    closing = store.closing.get(uri)
    if closing is not None:
        closing.discard(client.id)
    if not shared:
        # The server analyses the document afresh; what it published of an earlier life is void.
        store.latest.pop(uri, None)
        return
    entry = store.latest.get(uri)
    doc = instance.documents.get(uri)
    # An empty set is shown too: the server alone publishes one after every open.
    if entry is None or doc is None or pulls(instance, client):
        return
    if entry.version is not None and entry.version != doc.version:
        # Published for text that has changed since: the server publishes again for this one.
        return
    push(instance, client, entry)


def attached(instance: Instance, client: ClientSession) -> None:
    """A push client finished initializing: show it the diagnostics of files nobody holds (workspace analysis)."""
    if pulls(instance, client):
        return
    store = instance.diagnostics
    for uri in sorted(store.broadcast):
        entry = store.latest.get(uri)
        if entry is not None and entry.diagnostics and instance.documents.get(uri) is None:
            push(instance, client, entry)


def closed(instance: Instance, client: ClientSession, uri: str, *, last: bool) -> None:
    """A client closed `uri`: clear what it was shown, now or with the server's own clearing publish."""
    store = instance.diagnostics
    forget(instance, client.id, uri)
    shown = store.shown.get(uri, {})
    if pulls(instance, client):
        # A pull client drops a closed document's pulled diagnostics itself; some servers still
        # publish the empty set to it (the adapter knows), and so does the daemon.
        shown.pop(client.id, None)
        if instance.adapter.clears_closed_documents_for_pull_clients and pull_registration(instance, client):
            client.send(ev.notification(_PUBLISH, ev.encode_value({"uri": uri, "diagnostics": []})))
        return
    # A server alone answers every didClose with a publish (the empty set, without a version),
    # whether or not it had shown the client anything for the document.
    if last:
        # The server answers the didClose with its own publish: that one is this client's.
        store.closing.setdefault(uri, set()).add(client.id)
        return
    # Others still hold it, so the server hears nothing: the daemon clears it as the server would.
    shown.pop(client.id, None)
    client.send(ev.notification(_PUBLISH, ev.encode_value({"uri": uri, "diagnostics": []})))
