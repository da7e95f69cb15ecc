"""Client → server: ids and progress tokens rewritten, documents through the store.

Lifecycle messages (`initialize` again, `shutdown`, `exit`) are answered here
for the one client that sent them; the server never sees them. The way back
is server_routing.py.
"""

from __future__ import annotations

import logging
import re
import time
from typing import TYPE_CHECKING, Any

import anyio
from msgspec import UNSET, Raw

from lensmux.daemon.mux import joining
from lensmux.daemon.mux.clients.client_session import ClientSession
from lensmux.daemon.mux.diagnostics import diagnostic_wording, diagnostics, diagnostics_pull
from lensmux.daemon.mux.diagnostics.diagnostic_wording import CODE_ACTION
from lensmux.daemon.mux.documents import notebooks, request_first
from lensmux.daemon.mux.documents.documents import ServerNotice
from lensmux.daemon.mux.documents.positions import client_encoding
from lensmux.daemon.mux.errors import ServerUnavailable
from lensmux.daemon.mux.lifecycle.breaker import BreakerState
from lensmux.daemon.mux.progress import progress_routes, request_progress
from lensmux.daemon.mux.requests import client_cancel
from lensmux.daemon.mux.requests.answers import answer_all, forget_inflight
from lensmux.daemon.mux.requests.cache import CACHEABLE, CacheKey
from lensmux.daemon.mux.requests.pending import Pending
from lensmux.daemon.mux.views import index_scope, own_answer
from lensmux.daemon.mux.views.result_shape import SYMBOLS_METHOD
from lensmux.daemon.mux.workspace import registrations, settings_policy, workspace_folders
from lensmux.daemon.paths import uri_to_path
from lensmux.daemon.wire import envelope as ev
from lensmux.daemon.wire.envelope import Envelope, ErrorCode

if TYPE_CHECKING:
    from lensmux.daemon.mux.instance import Instance

log = logging.getLogger(__name__)

_DOC_SYNC = frozenset({"textDocument/didOpen", "textDocument/didChange", "textDocument/didClose"})
# Client notifications the daemon consumes: the server got its one `initialized`.
_SWALLOWED = frozenset({"initialized", "$/setTrace"})
# Lifecycle notifications a client may send; as requests they are refused, never forwarded.
_LIFECYCLE_NOTIFICATIONS = frozenset({"initialized", "exit"})
# Lifecycle requests sent as notifications: no answer to give, and never the server's to hear.
_LIFECYCLE_REQUESTS = frozenset({"initialize", "shutdown"})
# Searched in the raw params (re reads the buffer: no copy of the body).
_TOKEN_KEYS = re.compile(rb'"(?:workDoneToken|partialResultToken)"')


async def from_client(instance: Instance, client: ClientSession, env: Envelope) -> None:
    """Route one message from an attached client."""
    instance.touch(client)
    method = env.method
    assert isinstance(method, str)
    discovery = instance.warmup.discovery
    if discovery.queues(method):
        # The server has yet to discover its workspace (discovery.py): this client's messages
        # wait here until it has, then go on in the order they came, other clients' included.
        async with discovery.in_order(method):
            await _route(instance, client, env, method)
        return
    await _route(instance, client, env, method)


async def _route(instance: Instance, client: ClientSession, env: Envelope, method: str) -> None:
    if env.id is not UNSET:
        await _client_request(instance, client, env, method)
        return
    if method in _DOC_SYNC:
        await _document_sync(instance, client, method, ev.decode_value(env.params))
    elif method == "$/cancelRequest":
        await client_cancel.cancel(instance, client, ev.decode_value(env.params))
    elif method == workspace_folders.METHOD:
        await workspace_folders.client_changed(instance, client.id, client.name, ev.decode_value(env.params))
    elif method == "exit":
        client.close("client exit")
    elif method == "initialized":
        if client.initialized:
            # Some clients send it twice (the Go MCP bridge); the server alone would have heard both.
            joining.initialized_again(instance, client)
            return
        client.initialized = True
        registrations.replay(instance, client)
        diagnostics.attached(instance, client)
    elif method in _SWALLOWED:
        return
    elif method in _LIFECYCLE_REQUESTS:
        log.info("%s: %s sent %s as a notification; ignored", instance.name, client.name, method)
        return
    elif notebooks.is_notebook_sync(method):
        notebooks.refuse(client, method, ev.decode_value(env.params))
    elif method == settings_policy.METHOD:
        await _forward(instance, client, settings_policy.configuration_nudge(instance, client))
        instance.cache.workspace_changed()
    else:
        await _forward(instance, client, ev.notification(method, env.params))
        # Invalidate after forwarding, for the same reason as document changes.
        if method == "workspace/didChangeWatchedFiles":
            instance.cache.workspace_changed()
        elif method == "textDocument/didSave":
            _document_saved(instance, env.params)


def route_request_now(instance: Instance, client: ClientSession, env: Envelope) -> bool:
    """Route a client's request inside its socket's read callback, if nothing on its way has to wait.

    True once it is routed (sent to the server, answered or joined), exactly as
    `from_client` would have; False, with nothing changed, when the server is not
    ready, the breaker is not closed, the request must wait for the server's discovery
    of its workspace (or behind messages that did) or the server's pipe does not take a write at once: the session's
    reader task then routes it the ordinary way. The session
    offers only requests, and only while nothing of that client is queued or being
    handled, so nothing of the client's is overtaken.
    """
    link = instance.link
    method = env.method
    assert isinstance(method, str) and env.id is not UNSET and env.id is not None
    if (
        link is None
        or not instance.ready
        or instance.breaker.state is not BreakerState.CLOSED
        or instance.warmup.discovery.queues(method)
        or not link.writer.writes_now()
    ):
        return False
    instance.touch(client)
    route = _route_here(instance, client, env, method)
    if route is not None:
        # Nothing awaited since the checks above: still ready, still closed, the pipe still takes it.
        link.writer.send_now(_register(instance, client, env, method, route)[1])
    return True


async def _client_request(instance: Instance, client: ClientSession, env: Envelope, method: str) -> None:
    assert env.id is not UNSET and env.id is not None
    route = _route_here(instance, client, env, method)
    if route is None:
        return
    refusal = await instance.refusal(method)
    if refusal is not None:
        client.reply_error(env.id, ErrorCode.REQUEST_FAILED, refusal)
        return
    entry, body = _register(instance, client, env, method, route)
    try:
        await instance.send_to_server(body)
    except ServerUnavailable as exc:
        instance.pending.pop(entry.server_id)
        forget_inflight(instance, entry)
        instance.note_failure(str(exc))
        answer_all(entry, ev.error_response(env.id, ErrorCode.REQUEST_FAILED, str(exc)))


# What _route_here returns for a request the cache has no part in.
_UNCACHED: tuple[CacheKey | None, bool] = (None, False)


def _route_here(
    instance: Instance, client: ClientSession, env: Envelope, method: str
) -> tuple[CacheKey | None, bool] | None:
    """Answer what the daemon answers itself (lifecycle, pulls, the cache, joins); None if it did.

    Otherwise the request's cache key (or None) and whether its answer may be stored.
    """
    assert env.id is not UNSET and env.id is not None
    if method == "initialize":
        client.reply_error(env.id, ErrorCode.INVALID_REQUEST, "initialize was already sent")
        return None
    if method in _LIFECYCLE_NOTIFICATIONS:
        # The server's lifecycle is the daemon's: an `exit` with an id would stop the shared server
        # for everyone (pygls exits on it whatever the id).
        client.reply_error(env.id, ErrorCode.INVALID_REQUEST, f"{method} is a notification, not a request")
        return None
    if method == "shutdown":
        # A client's shutdown ends that client only; the server stays for the others.
        client.shutdown_requested = True
        client.reply(env.id, None)
        return None
    if method in diagnostics_pull.PULL_METHODS and not diagnostics.server_answers_pull(instance, client, method):
        # The server only pushes; pulls are answered from what it pushed.
        diagnostics_pull.handle(instance, client, env.id, method, ev.decode_value(env.params))
        return None
    if method not in CACHEABLE or not instance.cache.enabled or env.params is UNSET:
        return _UNCACHED
    params = ev.decode_value(env.params)
    key = instance.cache.key_for(method, params)
    if key is None:
        return _UNCACHED
    # Asked before any lookup: the end of a warm-up bumps the generation, so
    # no later request joins a leader sent while the server was still warming.
    storable = instance.caching_allowed(method)
    hit = instance.cache.get(key)
    if hit is not None:
        answer = own_answer.for_client(instance, client, method, Raw(hit), key.uri)
        # What the server showed while it computed this answer, as it would have shown this client.
        instance.shown_progress.tell(client, method, request_progress.work_done_token(params))
        client.send(ev.response(env.id, answer))
        return None
    leader = instance.inflight.get(key.key)
    # Join only a request sent since the last relevant edit: an older one
    # may answer for text that no longer exists.
    if (
        leader is not None
        and leader.generation == instance.cache.generation_for(key)
        and instance.pending.get(leader.server_id) is leader
    ):
        leader.followers.append((client, env.id))
        token = request_progress.work_done_token(params)
        if token is not None:
            leader.follower_tokens[(client.id, env.id)] = token
        return None
    return key, storable


def _register(
    instance: Instance, client: ClientSession, env: Envelope, method: str, route: tuple[CacheKey | None, bool]
) -> tuple[Pending, bytes]:
    """Put the request in the pending table (and the in-flight table); its body for the server."""
    assert env.id is not UNSET and env.id is not None
    key, storable = route
    entry = instance.pending.add_client(method, client, env.id)
    if method in (SYMBOLS_METHOD, diagnostics_pull.DOCUMENT_PULL) or method in index_scope.METHODS:
        entry.doc_uri = key.uri if key is not None else ev.document_uri(env.params)
    if key is not None:
        # Identical requests join this one even while warming (they would get the
        # same answer from the server now); only storing waits for the warm-up.
        entry.cache_key, entry.generation = key, instance.cache.generation_for(key)
        entry.storable = storable
        instance.inflight[key.key] = entry
    params = env.params
    if params is not UNSET and method == CODE_ACTION and diagnostic_wording.rewords(instance, client, method):
        params, entry.diagnostics_back = diagnostic_wording.context_to_server(instance, client, params)
    if params is not UNSET and _TOKEN_KEYS.search(params):
        params = _rewrite_tokens(instance, client, entry, params)
    return entry, ev.request(entry.server_id, method, params)


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


async def _document_sync(instance: Instance, client: ClientSession, method: str, params: Any) -> None:
    if not isinstance(params, dict) or not isinstance(params.get("textDocument"), dict):
        log.info("%s: %s without textDocument ignored", client.name, method)
        return
    docs = instance.documents
    uri = params["textDocument"].get("uri")
    if method == "textDocument/didOpen":
        # Read before taking the document lock; compared inside it, against
        # whatever the document holds by then. Also for a first open where a saved
        # file opened changes no answer (pyright): agents open a file before each
        # question and close it after, and their answers stay shared in the cache.
        epoch = instance.cache.disk_epoch
        wanted = docs.get(str(uri)) is not None or not instance.adapter.opening_saved_files_changes_answers
        disk = await _disk_text(uri) if wanted else None
        shared = False

        def open_document() -> list[ServerNotice]:
            nonlocal shared
            shared = docs.get(str(uri)) is not None
            return docs.open(client.id, params, disk_text=disk, disk_epoch=epoch)

        await instance.sync_documents(open_document)
        diagnostics.opened(instance, client, str(uri), shared=shared)
    elif method == "textDocument/didChange":
        encoding = client_encoding(client.capabilities)
        await instance.sync_documents(lambda: docs.change(client.id, params, encoding))
        for hook in instance.on_changed:
            hook(str(uri))
    else:
        await request_first.hold_close(instance, client, str(uri))
        await instance.sync_documents(lambda: docs.close(client.id, str(uri)))
        diagnostics.closed(instance, client, str(uri), last=docs.get(str(uri)) is None)


class RequestFirstRoute:
    """The session's request-first hook for one instance (documents/request_first.py)."""

    def __init__(self, instance: Instance) -> None:
        self.instance = instance

    async def window(self, client: ClientSession, env: Envelope) -> float | None:
        return await request_first.window(self.instance, client, env, _disk_text)

    def goes_first(self, client: ClientSession, open_env: Envelope, nxt: Envelope) -> bool:
        return request_first.goes_first(self.instance, client, open_env, nxt)

    async def answered(self, client: ClientSession, nxt: Envelope) -> None:
        instance = self.instance
        if nxt.id is UNSET or nxt.id is None:
            return
        hold = instance.daemon_config.request_first_hold
        with anyio.move_on_after(hold) as scope:
            await instance.pending.wait_answered(client, nxt.id)
        if scope.cancelled_caught:
            log.info(
                "%s: %s's %s unanswered after %.1fs; its didOpen goes now", instance.name, client.name, nxt.method, hold
            )
        else:
            log.debug("%s: %s's %s answered; its didOpen goes now", instance.name, client.name, nxt.method)


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
    uri = ev.document_uri(params)
    if uri is not None:
        instance.cache.document_changed(uri)
        for hook in instance.on_saved:
            hook(uri)


async def _forward(instance: Instance, client: ClientSession, body: bytes) -> None:
    try:
        await instance.send_to_server(body)
    except ServerUnavailable as exc:
        log.debug("%s: notification from %s dropped: %s", instance.name, client.name, exc)


async def detach(instance: Instance, client: ClientSession) -> None:
    """A client left: close its documents, drop its requests and progress, answer for it."""
    instance.clients.pop(client.id, None)
    # Server requests it never answered: the server would wait forever.
    await client.abandon_requests()
    instance.diagnostics.forget_client(client.id)
    registrations.forget_client(instance, client.id)
    await client_cancel.abandon(instance, client)
    await instance.sync_documents(lambda: instance.documents.drop_client(client.id))
    await workspace_folders.client_left(instance, client.id)
    progress_routes.release_client(instance, client)
    if not instance.clients:
        instance.idle_since = time.monotonic()
