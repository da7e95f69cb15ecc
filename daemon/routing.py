"""Message routing between an instance's clients and its server.

Client → server: ids and progress tokens rewritten, documents through the
store, lifecycle messages answered here. Server → client: responses to the
client that asked, notifications to the clients concerned, server requests to
server_requests.py.
"""

from __future__ import annotations

import logging
import time
from typing import Any

import anyio
import msgspec
from msgspec import UNSET, Raw

from lensmux.daemon import server_requests
from lensmux.daemon.client_session import ClientSession
from lensmux.daemon.instance import Instance, ServerUnavailable
from lensmux.daemon.pending import Pending
from lensmux.daemon.wire import envelope as ev
from lensmux.daemon.wire.envelope import Envelope, ErrorCode

log = logging.getLogger(__name__)

_DOC_SYNC = frozenset({"textDocument/didOpen", "textDocument/didChange", "textDocument/didClose"})
# Client notifications the daemon consumes: the server got its one `initialized`.
_SWALLOWED = frozenset({"initialized", "$/setTrace", "workspace/didChangeWorkspaceFolders"})
_TOKEN_KEYS = (b'"workDoneToken"', b'"partialResultToken"')


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
    return result


# -- client → server ------------------------------------------------------


async def from_client(instance: Instance, client: ClientSession, env: Envelope) -> None:
    """Route one message from an attached client."""
    instance.touch(client)
    method = env.method
    assert isinstance(method, str)
    if env.is_request:
        await _client_request(instance, client, env, method)
        return
    if method in _DOC_SYNC:
        await _document_sync(instance, client, method, ev.decode_value(env.params))
    elif method == "$/cancelRequest":
        await _client_cancel(instance, client, ev.decode_value(env.params))
    elif method == "exit":
        client.close("client exit")
    elif method == "initialized":
        client.initialized = True
        server_requests.replay_registrations(instance, client)
    elif method in _SWALLOWED:
        return
    else:
        await _forward(instance, client, ev.notification(method, env.params))


async def _client_request(instance: Instance, client: ClientSession, env: Envelope, method: str) -> None:
    assert env.id is not UNSET and env.id is not None
    if method == "initialize":
        client.reply_error(env.rid, ErrorCode.INVALID_REQUEST, "initialize was already sent")
        return
    if method == "shutdown":
        # A client's shutdown ends that client only; the server stays for the others.
        client.shutdown_requested = True
        client.reply(env.id, None)
        return
    if not instance.ready and not await instance.wait_ready(instance.config.timeouts.for_method(method)):
        client.reply_error(
            env.rid, ErrorCode.REQUEST_FAILED, f"{instance.key.server} is not running ({instance.state})"
        )
        return
    entry = instance.pending.add_client(method, client, env.id)
    params = env.params
    if params is not UNSET and any(k in bytes(params) for k in _TOKEN_KEYS):
        params = _rewrite_tokens(instance, client, entry, params)
    try:
        await instance.send_to_server(ev.request(entry.server_id, method, params))
    except ServerUnavailable as exc:
        instance.pending.pop(entry.server_id)
        client.reply_error(env.rid, ErrorCode.REQUEST_FAILED, str(exc))


def _rewrite_tokens(instance: Instance, client: ClientSession, entry: Pending, params: Raw) -> Raw:
    """Make client-chosen progress tokens unique across clients."""
    value = ev.decode_value(params)
    if not isinstance(value, dict):
        return params
    for key in ("workDoneToken", "partialResultToken"):
        if key in value:
            token = f"lensmux/{client.id}/{entry.server_id}/{key}"
            instance.client_tokens[token] = (client, value[key])
            entry.tokens.append(token)
            value[key] = token
    return ev.encode_value(value)


async def _client_cancel(instance: Instance, client: ClientSession, params: Any) -> None:
    if not isinstance(params, dict) or "id" not in params:
        return
    entry = instance.pending.find_client(client, params["id"])
    if entry is None or entry.detached:
        return
    # The client gets its answer now; the server's late one is dropped.
    entry.detached = True
    client.reply_error(entry.client_id, ErrorCode.REQUEST_CANCELLED, "request cancelled")
    await instance.cancel_at_server(entry.server_id)


async def _document_sync(instance: Instance, client: ClientSession, method: str, params: Any) -> None:
    if not isinstance(params, dict) or not isinstance(params.get("textDocument"), dict):
        log.info("%s: %s without textDocument ignored", client.name, method)
        return
    docs = instance.documents
    if method == "textDocument/didOpen":
        notices = docs.open(client.id, params)
    elif method == "textDocument/didChange":
        notices = docs.change(client.id, params)
    else:
        notices = docs.close(client.id, params["textDocument"].get("uri", ""))
    for notice in notices:
        await _notify(instance, notice.method, notice.params)


async def _forward(instance: Instance, client: ClientSession, body: bytes) -> None:
    try:
        await instance.send_to_server(body)
    except ServerUnavailable as exc:
        log.debug("%s: notification from %s dropped: %s", instance.name, client.name, exc)


async def _notify(instance: Instance, method: str, params: Any) -> None:
    try:
        await instance.notify_server(method, params)
    except ServerUnavailable:
        # Documents are replayed from the store when the server comes back.
        pass


async def detach(instance: Instance, client: ClientSession) -> None:
    """A client left: close its documents, drop its requests and progress."""
    instance.clients.pop(client.id, None)
    for entry in instance.pending.of_client(client):
        if not entry.detached:
            entry.detached = True
            await instance.cancel_at_server(entry.server_id)
    for notice in instance.documents.drop_client(client.id):
        await _notify(instance, notice.method, notice.params)
    for routes in instance.progress_routes.values():
        routes.discard(client.id)
    for token in [t for t, (c, _) in instance.client_tokens.items() if c is client]:
        del instance.client_tokens[token]
    if not instance.clients:
        instance.idle_since = time.monotonic()


# -- server → client ------------------------------------------------------


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
    for token in entry.tokens:
        instance.client_tokens.pop(token, None)
    if entry.done is not None:
        entry.reply = env
        entry.done.set()
        return
    instance.requests_served += 1
    client = entry.client
    if entry.detached or client is None or client.id not in instance.clients:
        return
    client.send(ev.encode(Envelope(id=entry.client_id, result=env.result, error=env.error)))


def fail_pending(instance: Instance, entry: Pending, reason: str) -> None:
    """Answer a request that will never get its server answer."""
    message = f"{instance.key.server}: {reason}"
    if entry.done is not None:
        entry.failure = message
        entry.done.set()
    elif not entry.detached and entry.client is not None:
        entry.detached = True
        entry.client.reply_error(entry.client_id, ErrorCode.REQUEST_FAILED, message)


async def timeout_task(instance: Instance) -> None:
    """Fail client requests past their method's timeout and cancel them at the server."""
    timeouts = instance.config.timeouts
    while True:
        await anyio.sleep(0.25)
        now = time.monotonic()
        for entry in instance.pending.entries():
            if entry.detached or entry.client is None:
                continue
            limit = timeouts.for_method(entry.method)
            if now - entry.started >= limit:
                entry.detached = True
                entry.client.reply_error(
                    entry.client_id,
                    ErrorCode.REQUEST_FAILED,
                    f"{instance.key.server}: {entry.method} timed out after {limit:g}s",
                )
                log.warning("%s: %s timed out after %gs", instance.name, entry.method, limit)
                await instance.cancel_at_server(entry.server_id)


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
    for client in list(instance.clients.values()):
        client.send(body)


def _route_diagnostics(instance: Instance, params: Raw) -> None:
    try:
        head = _diag_decoder.decode(params)
    except msgspec.DecodeError:
        return
    holders = instance.documents.holders(head.uri)
    # Diagnostics of files nobody has open (workspace-wide analysis, or the
    # clearing after a close) go to everyone.
    targets = [instance.clients[c] for c in holders if c in instance.clients] or list(instance.clients.values())
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
