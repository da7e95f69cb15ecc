"""Server → client: answers to the client that asked, notifications to the clients concerned.

Responses go to the client that asked (or to the daemon's own waiter),
diagnostics and per-document news to the clients holding the document,
`$/progress` by token, other notifications to all; server requests go to
server_requests.py.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import msgspec
from msgspec import UNSET, Raw

from lensmux.daemon.mux import notebooks, server_requests
from lensmux.daemon.mux.answers import answer_all, forget_inflight
from lensmux.daemon.wire import envelope as ev
from lensmux.daemon.wire.envelope import Envelope

if TYPE_CHECKING:
    from lensmux.daemon.mux.instance import Instance

log = logging.getLogger(__name__)


class _DiagnosticsHead(msgspec.Struct):
    uri: str
    version: int | None = None


_diag_decoder = msgspec.json.Decoder(_DiagnosticsHead)


class _ProgressHead(msgspec.Struct):
    token: int | str
    value: Any = None


_progress_decoder = msgspec.json.Decoder(_ProgressHead)


def client_initialize_result(instance: Instance, result: Raw | Any) -> Raw:
    """The InitializeResult every client of the instance gets."""
    if not isinstance(result, Raw):
        return ev.NULL
    return notebooks.without_notebook_sync(result)


async def from_server(instance: Instance, env: Envelope) -> None:
    """Route one message from the server."""
    if env.is_response:
        _server_response(instance, env)
    elif env.is_request:
        await server_requests.handle(instance, env)
    else:
        _server_notification(instance, env)


def _server_response(instance: Instance, env: Envelope) -> None:
    entry = instance.pending.pop(env.rid)
    if entry is None:
        log.debug("%s: response to unknown id %r dropped", instance.name, env.id)
        return
    # Any answer, even an error, shows the server is alive; but a server that
    # initializes and then dies on every request is still in a crash loop.
    if entry.method != "initialize":
        instance.breaker.record_success()
    for token in entry.tokens:
        instance.client_tokens.pop(token, None)
    forget_inflight(instance, entry)
    if entry.cache_key is not None and entry.storable and env.error is UNSET and env.result is not UNSET:
        instance.cache.put(entry.cache_key, bytes(env.result), entry.generation)
    if entry.done is not None:
        entry.reply = env
        entry.done.set()
        return
    instance.requests_served += 1
    client = entry.client
    waiting = not entry.detached and client is not None and client.id in instance.clients
    entry.detached = True
    if not waiting and not entry.followers:
        return
    if not waiting:
        # The leader left or gave up; its followers still get the answer.
        entry.client = None
    body = ev.encode(Envelope(id=entry.client_id, result=env.result, error=env.error))
    answer_all(entry, body)


def _server_notification(instance: Instance, env: Envelope) -> None:
    method = env.method
    body: bytes | None = None
    if method == "textDocument/publishDiagnostics" and env.params is not UNSET:
        _route_diagnostics(instance, env.params)
        return
    if method == "$/progress" and env.params is not UNSET:
        _route_progress(instance, env)
        return
    instance.adapter.observe_notification(str(method), env.params)
    body = ev.encode(env)
    if str(method).startswith("textDocument/") and env.params is not UNSET:
        # Per-document news (clangd's fileStatus, say) concerns only the clients
        # holding that document: clangd sends one with nearly every request.
        _route_to_holders(instance, env.params, body)
        return
    for client in list(instance.clients.values()):
        client.send(body)


class _UriHead(msgspec.Struct):
    uri: str | None = None


_uri_decoder = msgspec.json.Decoder(_UriHead)


def _route_to_holders(instance: Instance, params: Raw, body: bytes) -> None:
    try:
        uri = _uri_decoder.decode(params).uri
    except msgspec.DecodeError:
        uri = None
    if uri is None:
        for client in list(instance.clients.values()):
            client.send(body)
        return
    for cid in instance.documents.holders(uri):
        holder = instance.clients.get(cid)
        if holder is not None:
            holder.send(body)


def _route_diagnostics(instance: Instance, params: Raw) -> None:
    try:
        head = _diag_decoder.decode(params)
    except msgspec.DecodeError:
        return
    holders = instance.documents.holders(head.uri)
    if holders:
        targets = [instance.clients[c] for c in holders if c in instance.clients]
    elif b'"diagnostics":[]' in bytes(params) and head.uri not in instance.broadcast_diagnostics:
        # Clearing diagnostics no client ever saw (a file the daemon opened to index it).
        return
    else:
        # Diagnostics of files nobody has open (workspace-wide analysis) go to everyone.
        targets = list(instance.clients.values())
        instance.broadcast_diagnostics.add(head.uri)
    plain = ev.notification("textDocument/publishDiagnostics", params)
    if head.version is None:
        for client in targets:
            client.send(plain)
        return
    value = ev.decode_value(params)
    for client in targets:
        version = instance.documents.client_version(head.uri, client.id, head.version)
        if version is None:
            value.pop("version", None)
        else:
            value["version"] = version
        client.send(ev.notification("textDocument/publishDiagnostics", ev.encode_value(value)))


def _route_progress(instance: Instance, env: Envelope) -> None:
    assert env.params is not UNSET
    try:
        head = _progress_decoder.decode(env.params)
    except msgspec.DecodeError:
        return
    token = head.token
    if isinstance(token, str) and token in instance.client_tokens:
        owner, original = instance.client_tokens[token]
        owner.send(ev.notification("$/progress", ev.encode_value({"token": original, "value": head.value})))
        return
    if isinstance(head.value, dict):
        instance.adapter.observe_progress(token, head.value)
        if head.value.get("kind") != "end":
            instance.warmup.saw_progress()
    routes = instance.progress_routes.get(token)
    if routes is None:
        return
    body = ev.encode(env)
    for cid in list(routes):
        client = instance.clients.get(cid)
        if client is not None:
            client.send(body)
    if isinstance(head.value, dict) and head.value.get("kind") == "end":
        instance.progress_routes.pop(token, None)
