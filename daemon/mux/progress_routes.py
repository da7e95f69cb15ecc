"""Progress tokens per client: released when a client leaves, ended when the server goes.

Two kinds of token cross the daemon. Server-created ones (window/workDoneProgress/create)
are routed to the clients that were told of them; client-chosen ones
(workDoneToken in a request) are rewritten per client and mapped back. A client
that leaves takes its routes and tokens with it. A server that exits cannot end
what it began, so the daemon ends it for the clients that saw the begin: an
editor must not show a spinner for a process that no longer exists.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from msgspec import UNSET

from lensmux.daemon.wire import envelope as ev

if TYPE_CHECKING:
    from lensmux.daemon.mux.client_session import ClientSession
    from lensmux.daemon.mux.instance import Instance

log = logging.getLogger(__name__)


def fallback_bodies(instance: Instance, token: Any, value: dict[str, Any]) -> list[bytes]:
    """What the server alone sends a client without window progress for this progress value (adapter)."""
    return [
        ev.notification(method, UNSET if params is None else ev.encode_value(params))
        for method, params in instance.adapter.progress_notifications(token, value)
    ]


def release_client(instance: Instance, client: ClientSession) -> None:
    """Forget every route to and token of a client that left."""
    for token in [t for t, routes in instance.progress_routes.items() if client.id in routes]:
        routes = instance.progress_routes[token]
        routes.discard(client.id)
        if not routes:
            # Nobody to tell any more: a later $/progress for it is simply dropped.
            del instance.progress_routes[token]
    for token in [t for t, (c, _) in instance.client_tokens.items() if c is client]:
        del instance.client_tokens[token]


def server_gone(instance: Instance, reason: str) -> None:
    """The server exited: end its progress at every client that saw it begin, forget every token."""
    ended = 0
    for token, routes in instance.progress_routes.items():
        end = {"kind": "end", "message": reason}
        body = ev.notification("$/progress", ev.encode_value({"token": token, "value": end}))
        # A client without window progress was told in the server's other words, if at all.
        other = fallback_bodies(instance, token, end)
        for cid in routes:
            client = instance.clients.get(cid)
            if client is None:
                continue
            for message in [body] if client.supports_progress else other:
                client.send(message)
                ended += 1
    instance.progress_routes.clear()
    # Requests in flight were failed with the process; so are the tokens they carried.
    instance.client_tokens.clear()
    if ended:
        log.info("%s: ended %d progress reports the exited server left open", instance.name, ended)
