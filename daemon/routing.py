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
from lensmux.daemon.cache import CACHEABLE
from lensmux.daemon.client_session import ClientSession
from lensmux.daemon.instance import Instance, ServerUnavailable
from lensmux.daemon.paths import uri_to_path
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
        # Invalidate after forwarding, for the same reason as document changes.
        if method == "workspace/didChangeWatchedFiles":
            instance.cache.workspace_changed()
        elif method == "textDocument/didSave":
            _document_saved(instance, env.params)


async def _client_request(instance: Instance, client: ClientSession, env: Envelope, method: str) -> None:
    assert env.id is not UNSET and env.id is not None
    if method == "initialize":
        client.reply_error(env.id, ErrorCode.INVALID_REQUEST, "initialize was already sent")
        return
    if method == "shutdown":
        # A client's shutdown ends that client only; the server stays for the others.
        client.shutdown_requested = True
        client.reply(env.id, None)
        return
    key = None
    if method in CACHEABLE and instance.cache.enabled and env.params is not UNSET:
        key = instance.cache.key_for(method, ev.decode_value(env.params))
    if key is not None:
        hit = instance.cache.get(key)
        if hit is not None:
            client.send(ev.response(env.id, Raw(hit)))
            return
        leader = instance.inflight.get(key.key)
        # Join only a request sent since the last relevant edit: an older one
        # may answer for text that no longer exists.
        if leader is not None and leader.generation == instance.cache.generation_for(key):
            leader.followers.append((client, env.id))
            return
    if not instance.breaker.allow():
        client.reply_error(env.id, ErrorCode.REQUEST_FAILED, instance.breaker.rejection())
        return
    if not instance.ready and not await instance.wait_ready(instance.config.timeouts.for_method(method)):
        client.reply_error(env.id, ErrorCode.REQUEST_FAILED, f"{instance.key.server} is not running ({instance.state})")
        return
    entry = instance.pending.add_client(method, client, env.id)
    if key is not None and instance.caching_allowed(method):
        entry.cache_key, entry.generation = key, instance.cache.generation_for(key)
        instance.inflight[key.key] = entry
    params = env.params
    if params is not UNSET and any(k in bytes(params) for k in _TOKEN_KEYS):
        params = _rewrite_tokens(instance, client, entry, params)
    try:
        await instance.send_to_server(ev.request(entry.server_id, method, params))
    except ServerUnavailable as exc:
        instance.pending.pop(entry.server_id)
        _forget_inflight(instance, entry)
        instance.note_failure(str(exc))
        _answer_all(entry, ev.error_response(env.id, ErrorCode.REQUEST_FAILED, str(exc)))


def _forget_inflight(instance: Instance, entry: Pending) -> None:
    if entry.cache_key is not None and instance.inflight.get(entry.cache_key.key) is entry:
        del instance.inflight[entry.cache_key.key]


def _answer_all(entry: Pending, body_for_leader: bytes | None, error: tuple[int, str] | None = None) -> None:
    """Send the leader its answer (if it still waits) and every coalesced follower the same, under its own id."""
    if body_for_leader is not None and entry.client is not None:
        entry.client.send(body_for_leader)
    for follower, fid in entry.followers:
        if error is not None:
            follower.reply_error(fid, error[0], error[1])
        elif body_for_leader is not None:
            env = ev.decode(body_for_leader)
            follower.send(ev.encode(Envelope(id=fid, result=env.result, error=env.error)))
    entry.followers.clear()


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
    cid = params["id"]
    entry = instance.pending.find_client(client, cid)
    if entry is None:
        _cancel_follower(instance, client, cid)
        return
    if entry.detached:
        return
    # The client gets its answer now; the server's late one is dropped.
    entry.detached = True
    client.reply_error(entry.client_id, ErrorCode.REQUEST_CANCELLED, "request cancelled")
    if not entry.followers:
        _forget_inflight(instance, entry)
        await instance.cancel_at_server(entry.server_id)


def _cancel_follower(instance: Instance, client: ClientSession, cid: Any) -> None:
    for leader in instance.inflight.values():
        for i, (follower, fid) in enumerate(leader.followers):
            if follower is client and fid == cid:
                del leader.followers[i]
                client.reply_error(cid, ErrorCode.REQUEST_CANCELLED, "request cancelled")
                return


async def _document_sync(instance: Instance, client: ClientSession, method: str, params: Any) -> None:
    if not isinstance(params, dict) or not isinstance(params.get("textDocument"), dict):
        log.info("%s: %s without textDocument ignored", client.name, method)
        return
    docs = instance.documents
    uri = params["textDocument"].get("uri")
    if method == "textDocument/didOpen":
        # Read before taking the document lock; compared inside it, against
        # whatever the document holds by then.
        disk = await _disk_text(uri) if docs.get(str(uri)) is not None else None
        await instance.sync_documents(lambda: docs.open(client.id, params, disk_text=disk))
    elif method == "textDocument/didChange":
        await instance.sync_documents(lambda: docs.change(client.id, params))
    else:
        await instance.sync_documents(lambda: docs.close(client.id, str(uri)))


async def _disk_text(uri: Any) -> str | None:
    """The saved text of a file URI, or None if it cannot be read."""
    path = uri_to_path(uri) if isinstance(uri, str) else None
    if path is None:
        return None
    try:
        return await anyio.Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def _document_saved(instance: Instance, params: Raw | Any) -> None:
    value = ev.decode_value(params)
    doc = value.get("textDocument") if isinstance(value, dict) else None
    if isinstance(doc, dict) and isinstance(doc.get("uri"), str):
        instance.cache.document_changed(doc["uri"])
        for hook in instance.on_saved:
            hook(doc["uri"])


async def _forward(instance: Instance, client: ClientSession, body: bytes) -> None:
    try:
        await instance.send_to_server(body)
    except ServerUnavailable as exc:
        log.debug("%s: notification from %s dropped: %s", instance.name, client.name, exc)


async def detach(instance: Instance, client: ClientSession) -> None:
    """A client left: close its documents, drop its requests and progress."""
    instance.clients.pop(client.id, None)
    for entry in instance.pending.of_client(client):
        if not entry.detached:
            entry.detached = True
            if not entry.followers:
                _forget_inflight(instance, entry)
                await instance.cancel_at_server(entry.server_id)
    for leader in instance.inflight.values():
        leader.followers[:] = [(c, i) for c, i in leader.followers if c is not client]
    await instance.sync_documents(lambda: instance.documents.drop_client(client.id))
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
    # Any answer, even an error, shows the server is alive; but a server that
    # initializes and then dies on every request is still in a crash loop.
    if entry.method != "initialize":
        instance.breaker.record_success()
    for token in entry.tokens:
        instance.client_tokens.pop(token, None)
    _forget_inflight(instance, entry)
    if entry.cache_key is not None and env.error is UNSET and env.result is not UNSET:
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
    _answer_all(entry, body)


def fail_pending(instance: Instance, entry: Pending, reason: str) -> None:
    """Answer a request that will never get its server answer."""
    message = f"{instance.key.server}: {reason}"
    _forget_inflight(instance, entry)
    if entry.done is not None:
        entry.failure = message
        entry.done.set()
        return
    body = None
    if not entry.detached and entry.client is not None:
        entry.detached = True
        body = ev.error_response(entry.client_id, ErrorCode.REQUEST_FAILED, message)
    _answer_all(entry, body, (ErrorCode.REQUEST_FAILED, message))


async def timeout_task(instance: Instance) -> None:
    """Fail client requests past their method's timeout and cancel them at the server."""
    timeouts = instance.config.timeouts
    while True:
        await anyio.sleep(0.25)
        now = time.monotonic()
        for entry in instance.pending.entries():
            if entry.client is None:
                continue
            limit = timeouts.for_method(entry.method)
            age = now - entry.started
            if entry.detached and not entry.followers:
                # Nobody waits any more; forget it once the server had ample time.
                if age >= 2 * limit:
                    instance.pending.pop(entry.server_id)
                continue
            if age < limit:
                continue
            message = f"{instance.key.server}: {entry.method} timed out after {limit:g}s"
            body = None if entry.detached else ev.error_response(entry.client_id, ErrorCode.REQUEST_FAILED, message)
            entry.detached = True
            _forget_inflight(instance, entry)
            _answer_all(entry, body, (ErrorCode.REQUEST_FAILED, message))
            log.warning("%s: %s", instance.name, message)
            await instance.cancel_at_server(entry.server_id)
            instance.note_failure(message)


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
