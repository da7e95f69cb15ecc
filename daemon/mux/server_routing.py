"""Server → client: answers to the client that asked, notifications to the clients concerned.

Responses go to the client that asked (or to the daemon's own waiter),
diagnostics to diagnostics.py, per-document news to the clients holding the document,
`$/progress` by token, other notifications to all; server requests go to
server_requests.py.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import msgspec
from msgspec import UNSET, Raw

from lensmux.daemon.mux import server_requests
from lensmux.daemon.mux.diagnostics import diagnostics
from lensmux.daemon.mux.documents import notebooks
from lensmux.daemon.mux.lifecycle.breaker import BreakerState
from lensmux.daemon.mux.progress import progress_routes, request_progress
from lensmux.daemon.mux.requests import split_requests
from lensmux.daemon.mux.requests.answers import answer_all, forget_inflight
from lensmux.daemon.mux.requests.pending import Pending
from lensmux.daemon.mux.views import own_answer
from lensmux.daemon.wire import envelope as ev
from lensmux.daemon.wire.envelope import Envelope

if TYPE_CHECKING:
    from lensmux.daemon.mux.instance import Instance

log = logging.getLogger(__name__)


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
    if env.method is UNSET:
        if left := route_response(instance, env):
            await cancel_left(instance, left)
    elif env.id is not UNSET:
        await server_requests.handle(instance, env)
    else:
        _server_notification(instance, env)


async def cancel_left(instance: Instance, parts: list[Pending]) -> None:
    """Cancel at the server the requests a response left nobody waiting for (route_response)."""
    for part in parts:
        await instance.cancel_at_server(part.server_id, part.method, "another part of its split request failed")


def route_response(instance: Instance, env: Envelope) -> list[Pending]:
    """A response from the server: to the client that asked, its followers, or the daemon's own waiter.

    Returns the requests it leaves nobody waiting for (the other parts of a split request that
    failed), for the caller to cancel at the server; only a response without a result leaves any.
    """
    entry = instance.pending.pop(env.id)
    if entry is None:
        log.debug("%s: response to unknown id %r dropped", instance.name, env.id)
        return []
    # Any answer, even an error, shows the server is alive; but a server that
    # initializes and then dies on every request is still in a crash loop.
    # (A closed breaker without failures has nothing to record.)
    breaker = instance.breaker
    if entry.method != "initialize" and (breaker.consecutive_failures or breaker.state is not BreakerState.CLOSED):
        breaker.record_success()
    if entry.tokens:
        for token in entry.tokens:
            instance.client_tokens.pop(token, None)
    if entry.cache_key is not None:
        forget_inflight(instance, entry)
    if entry.cache_key is not None and entry.storable and env.error is UNSET and env.result is not UNSET:
        instance.cache.put(entry.cache_key, bytes(env.result), entry.generation)
    if entry.split is not None:
        return split_requests.answered(instance, entry, env)
    if entry.done is not None:
        if entry.method == "initialize":
            # Whatever the server says from now on, it says after its InitializeResult.
            instance.prologue.answered_initialize = True
        entry.reply = env
        entry.done.set()
        return []
    _answer_clients(instance, entry, env)
    return []


def _answer_clients(instance: Instance, entry: Pending, env: Envelope) -> None:
    """A client's request answered: to the client if it still waits, and to its followers."""
    instance.requests_served += 1
    client = entry.client
    waiting = not entry.detached and client is not None and client.id in instance.clients
    entry.detached = True
    if not waiting and not entry.followers:
        return
    if not waiting:
        # The leader left or gave up; its followers still get the answer.
        entry.client = None
    if entry.followers and env.result is not UNSET:
        request_progress.tell_followers(instance, entry)
    if env.result is not UNSET and own_answer.differs_per_client(instance, entry.method):
        _answer_each(instance, entry, env.result)
        return
    body = ev.encode(Envelope(id=entry.client_id, result=env.result, error=env.error))
    if entry.followers:
        answer_all(entry, body)
    elif entry.client is not None:
        entry.client.send(body)


def _answer_each(instance: Instance, entry: Pending, result: Raw) -> None:
    """A result each asker gets in its own terms (own_answer.py)."""
    askers = [(entry.client, entry.client_id)] if entry.client is not None else []
    for client, client_id in [*askers, *entry.followers]:
        own = own_answer.for_client(
            instance, client, entry.method, result, entry.doc_uri, diagnostics_back=entry.diagnostics_back
        )
        client.send(ev.response(client_id, own))
    entry.followers.clear()


def _server_notification(instance: Instance, env: Envelope) -> None:
    method = env.method
    body: bytes | None = None
    if method == "textDocument/publishDiagnostics" and env.params is not UNSET:
        diagnostics.on_publish(instance, env.params)
        return
    if method == "$/progress" and env.params is not UNSET:
        _route_progress(instance, env)
        return
    adapter = instance.adapter
    adapter.observe_notification(str(method), env.params)
    instance.warmup.discovery.observe()
    body = ev.encode(env)
    everyone = list(instance.clients.values())
    if adapter.extension_notification(str(method)):
        # An extension a client turns on in its initializationOptions (clangd's
        # fileStatus): only clients that asked for it would get it from the server alone.
        everyone = [c for c in everyone if adapter.notification_wanted(str(method), c.initialization_options)]
    if str(method).startswith("textDocument/") and env.params is not UNSET:
        # Per-document news (clangd's fileStatus, say) concerns only the clients
        # holding that document: clangd sends one with nearly every request.
        _route_to_holders(instance, env.params, body, {c.id for c in everyone})
        return
    for client in everyone:
        client.send(body)
    # Whoever joins later is told it too (prologue.py), as a server of its own would have.
    instance.prologue.notification(str(method), bytes(env.params) if env.params is not UNSET else b"", body)
    _close_prologue_when_warm(instance)


def _close_prologue_when_warm(instance: Instance) -> None:
    if instance.prologue.open and not instance.warmup.busy():
        instance.prologue.close()


class _UriHead(msgspec.Struct):
    uri: str | None = None


_uri_decoder = msgspec.json.Decoder(_UriHead)


def _route_to_holders(instance: Instance, params: Raw, body: bytes, allowed: set[int]) -> None:
    try:
        uri = _uri_decoder.decode(params).uri
    except msgspec.DecodeError:
        uri = None
    if uri is None:
        for client in list(instance.clients.values()):
            if client.id in allowed:
                client.send(body)
        return
    for cid in instance.documents.holders(uri):
        if cid not in allowed:
            continue
        holder = instance.clients.get(cid)
        if holder is not None:
            holder.send(body)


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
        request_progress.on_client_token(instance, token, head.value)
        return
    value = head.value if isinstance(head.value, dict) else None
    adapter = instance.adapter
    fallback: list[bytes] = []
    if value is not None and token in instance.progress_pending:
        if value.get("kind") == "begin":
            progress_routes.begun(instance, token, value)
        else:
            # A report or end of a progress that never began: nobody was told of it.
            instance.progress_pending.pop(token)
    if value is not None:
        # Asked before the adapter sees the value: an end still finds the token it ends.
        fallback = progress_routes.fallback_bodies(instance, token, value)
        adapter.observe_progress(token, value)
        if value.get("kind") != "begin":
            instance.shown_progress.progressed(token, value)
        if value.get("kind") != "end":
            instance.warmup.saw_progress()
        if instance.prologue.follows(token):
            instance.prologue.progress(token, value, fallback)
    routes = instance.progress_routes.get(token)
    if routes is not None:
        body = ev.encode(env)
        for cid in list(routes):
            client = instance.clients.get(cid)
            if client is None:
                continue
            if client.supports_progress:
                client.send(body)
            else:
                for other in fallback:
                    client.send(other)
        if value is not None and value.get("kind") == "end":
            instance.progress_routes.pop(token, None)
    if value is not None:
        _close_prologue_when_warm(instance)
