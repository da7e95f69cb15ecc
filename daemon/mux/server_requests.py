"""Server → client requests: answered by the daemon where it knows the answer.

Without these answers pyright waits forever on `workspace/configuration`;
registrations are kept in registrations.py, which gives each client those it
declared dynamic registration for.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import msgspec

from lensmux.daemon.mux import server_request_owner
from lensmux.daemon.mux.clients.client_caps import accepts_refresh
from lensmux.daemon.mux.errors import ServerUnavailable
from lensmux.daemon.mux.progress import progress_routes
from lensmux.daemon.mux.progress.progress_routes import PROGRESS_CREATE
from lensmux.daemon.mux.workspace import registrations
from lensmux.daemon.wire import envelope as ev
from lensmux.daemon.wire.envelope import Envelope, Id

if TYPE_CHECKING:
    from lensmux.daemon.mux.instance import Instance

log = logging.getLogger(__name__)

# Refresh requests carry no params and want the clients to re-ask: to those that declared refreshSupport.
_REFRESH_SUFFIX = "/refresh"


async def handle(instance: Instance, env: Envelope) -> None:
    """Answer or route one request from the server."""
    method = str(env.method)
    server_id = env.id
    assert server_id is not None and server_id is not ev.UNSET
    params = ev.decode_value(env.params)
    if method == "workspace/configuration":
        items = params.get("items", []) if isinstance(params, dict) else []
        await _answer(instance, server_id, instance.adapter.configuration(items))
    elif method == PROGRESS_CREATE:
        _progress_create(instance, params)
        await _answer(instance, server_id, None)
    elif method == "client/registerCapability":
        registrations.register(instance, params)
        await _answer(instance, server_id, None)
    elif method == "client/unregisterCapability":
        registrations.unregister(instance, params)
        await _answer(instance, server_id, None)
    elif method == "workspace/workspaceFolders":
        await _answer(instance, server_id, instance.folders.all())
    elif method.endswith(_REFRESH_SUFFIX):
        for client in list(instance.clients.values()):
            if client.initialized and accepts_refresh(client.capabilities, method):
                client.request(method, params)
        await _answer(instance, server_id, None)
    else:
        await server_request_owner.route(instance, server_id, method, params)


async def _answer(instance: Instance, server_id: Id, result: Any) -> None:
    try:
        await instance.send_to_server(ev.response(server_id, ev.encode_value(result)))
    except ServerUnavailable:
        pass


def _progress_create(instance: Instance, params: Any) -> None:
    token = params.get("token") if isinstance(params, dict) else None
    if token is not None:
        instance.adapter.observe_progress_created(token)
        progress_routes.created(instance, token)


__all__ = ["handle", "msgspec"]
