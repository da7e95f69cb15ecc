"""Server → client requests: answered by the daemon where it knows the answer.

Without these answers pyright waits forever on `workspace/configuration`;
registrations are kept in registrations.py, which gives each client those it
declared dynamic registration for.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import msgspec

from lensmux.daemon.mux import registrations
from lensmux.daemon.mux.client_caps import accepts_refresh
from lensmux.daemon.mux.client_session import ClientSession
from lensmux.daemon.mux.errors import ServerUnavailable
from lensmux.daemon.mux.result_shape import ResourceOperationsUnsupported, edit_for_client
from lensmux.daemon.wire import envelope as ev
from lensmux.daemon.wire.envelope import Envelope, ErrorCode, Id

if TYPE_CHECKING:
    from lensmux.daemon.mux.instance import Instance

log = logging.getLogger(__name__)

# Refresh requests carry no params and want the clients to re-ask: to those that declared refreshSupport.
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
        registrations.register(instance, params)
        await _answer(instance, server_id, None)
    elif method == "client/unregisterCapability":
        registrations.unregister(instance, params)
        await _answer(instance, server_id, None)
    elif method == "workspace/workspaceFolders":
        root = instance.key.root
        await _answer(instance, server_id, [{"uri": root.as_uri(), "name": root.name or str(root)}])
    elif method.endswith(_REFRESH_SUFFIX):
        for client in list(instance.clients.values()):
            if client.initialized and accepts_refresh(client.capabilities, method):
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
        if isinstance(params.get("edit"), dict):
            try:
                params["edit"] = edit_for_client(params["edit"], client.capabilities)
            except ResourceOperationsUnsupported as exc:
                await _answer(instance, server_id, {"applied": False, "failureReason": f"{client.name}: {exc}"})
                return

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


__all__ = ["handle", "msgspec"]
