"""Server → client requests: answered by the daemon where it knows the answer.

Without these answers pyright waits forever on `workspace/configuration`;
without the registration cache a client that joins later would never learn of
the server's dynamic capabilities.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import msgspec

from lensmux.daemon.mux.client_session import ClientSession
from lensmux.daemon.mux.errors import ServerUnavailable
from lensmux.daemon.wire import envelope as ev
from lensmux.daemon.wire.envelope import Envelope, ErrorCode, Id

if TYPE_CHECKING:
    from lensmux.daemon.mux.instance import Instance

log = logging.getLogger(__name__)

# Refresh requests carry no params and want the clients to re-ask: broadcast.
_REFRESH_SUFFIX = "/refresh"
# Requests only a person can answer: to the client that caused them.
_ROUTED_TO_OWNER = frozenset({"workspace/applyEdit", "window/showMessageRequest", "window/showDocument"})


async def handle(instance: Instance, env: Envelope) -> None:
    """Answer or route one request from the server."""
    method = str(env.method)
    server_id = env.id
    assert server_id is not None and server_id is not ev.UNSET
    params = ev.decode_value(env.params)
    if method == "workspace/configuration":
        items = params.get("items", []) if isinstance(params, dict) else []
        await _answer(instance, server_id, instance.adapter.configuration(items))
    elif method == "window/workDoneProgress/create":
        _progress_create(instance, params)
        await _answer(instance, server_id, None)
    elif method == "client/registerCapability":
        _register(instance, params)
        await _answer(instance, server_id, None)
    elif method == "client/unregisterCapability":
        _unregister(instance, params)
        await _answer(instance, server_id, None)
    elif method == "workspace/workspaceFolders":
        await _answer(instance, server_id, instance.folders.all())
    elif method.endswith(_REFRESH_SUFFIX):
        for client in list(instance.clients.values()):
            client.request(method, params)
        await _answer(instance, server_id, None)
    else:
        await _route_to_owner(instance, server_id, method, params)


async def _answer(instance: Instance, server_id: Id, result: Any) -> None:
    try:
        await instance.send_to_server(ev.response(server_id, ev.encode_value(result)))
    except ServerUnavailable:
        pass


def _progress_create(instance: Instance, params: Any) -> None:
    token = params.get("token") if isinstance(params, dict) else None
    if token is None:
        return
    targets = {c.id for c in instance.clients.values() if c.supports_progress}
    instance.progress_routes[token] = targets
    for cid in targets:
        # Each client must hear of the token before any $/progress with it.
        instance.clients[cid].request("window/workDoneProgress/create", {"token": token})


def _register(instance: Instance, params: Any) -> None:
    regs = params.get("registrations", []) if isinstance(params, dict) else []
    fresh = []
    for reg in regs:
        if not isinstance(reg, dict) or "id" not in reg:
            continue
        duplicate = any(
            old.get("method") == reg.get("method") and old.get("registerOptions") == reg.get("registerOptions")
            for old in instance.registrations.values()
        )
        instance.registrations[str(reg["id"])] = reg
        if not duplicate:
            # A restarted server registers again what the clients already have.
            fresh.append(reg)
    if fresh:
        for client in _initialized_clients(instance):
            client.request("client/registerCapability", {"registrations": fresh})


def _unregister(instance: Instance, params: Any) -> None:
    items = params.get("unregisterations", []) if isinstance(params, dict) else []
    gone = []
    for item in items:
        if isinstance(item, dict) and instance.registrations.pop(str(item.get("id")), None) is not None:
            gone.append(item)
    if gone:
        for client in _initialized_clients(instance):
            client.request("client/unregisterCapability", {"unregisterations": gone})


def _initialized_clients(instance: Instance) -> list[ClientSession]:
    return [c for c in instance.clients.values() if c.initialized]


def replay_registrations(instance: Instance, client: ClientSession) -> None:
    """Give a client that just finished initializing the registrations it missed."""
    if instance.registrations:
        client.request("client/registerCapability", {"registrations": list(instance.registrations.values())})


async def _route_to_owner(instance: Instance, server_id: Id, method: str, params: Any) -> None:
    client = instance.last_active_client()
    if client is None:
        try:
            await instance.send_to_server(
                ev.error_response(server_id, ErrorCode.REQUEST_FAILED, f"no client connected to answer {method}")
            )
        except ServerUnavailable:
            pass
        return
    if method == "workspace/applyEdit" and isinstance(params, dict):
        _map_edit_versions(instance, client, params)

    async def relay(reply: Envelope) -> None:
        await _send_reply(instance, server_id, reply)

    if method not in _ROUTED_TO_OWNER:
        log.debug("%s: routing unknown server request %s to %s", instance.name, method, client.name)
    client.request(method, params, relay)


async def _send_reply(instance: Instance, server_id: Id, reply: Envelope) -> None:
    body = ev.encode(Envelope(id=server_id, result=reply.result, error=reply.error))
    try:
        await instance.send_to_server(body)
    except ServerUnavailable:
        pass


def _map_edit_versions(instance: Instance, client: ClientSession, params: dict[str, Any]) -> None:
    """Edits name the server's document versions; the client knows only its own."""
    edit = params.get("edit")
    if not isinstance(edit, dict):
        return
    for change in edit.get("documentChanges") or []:
        ident = change.get("textDocument") if isinstance(change, dict) else None
        if isinstance(ident, dict) and isinstance(ident.get("version"), int):
            mapped = instance.documents.client_version(ident.get("uri", ""), client.id, ident["version"])
            ident["version"] = mapped


__all__ = ["handle", "msgspec", "replay_registrations"]
