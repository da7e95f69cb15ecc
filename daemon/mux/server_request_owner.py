"""Server → client requests only a person can answer go to the client that caused them.

`workspace/applyEdit`, `window/showMessageRequest`, `window/showDocument` and
requests the daemon does not know are the server's questions about something
a client asked for. The rule for which client that is:

1. Among the client requests in flight at this server when the server's
   request arrives, the cause is the one most likely to lead to it:
   `workspace/executeCommand`, then `codeAction/resolve` or `codeAction`, then
   `rename`, then any other; between equals the newest. A request its client
   cancelled still counts: the server may finish it anyway. Of a client that
   has left, only those four count (its edit then goes unapplied).
2. With nothing in flight, the most recently active client is asked (a
   server's own question, such as a showMessageRequest at startup).

The daemon answers the server itself when the cause's client has left, when
an edit names a document version older than the one it now holds (applying it
would corrupt the text), and on behalf of a client that leaves before
answering.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from lensmux.daemon.mux.clients.client_session import ClientSession
from lensmux.daemon.mux.errors import ServerUnavailable
from lensmux.daemon.mux.views.edits import client_versions, renumber, stale_documents
from lensmux.daemon.mux.views.result_shape import ResourceOperationsUnsupported, edit_for_client
from lensmux.daemon.wire import envelope as ev
from lensmux.daemon.wire.envelope import Envelope, ErrorCode, Id

if TYPE_CHECKING:
    from lensmux.daemon.mux.instance import Instance

log = logging.getLogger(__name__)

APPLY_EDIT = "workspace/applyEdit"
KNOWN_ROUTED = frozenset({APPLY_EDIT, "window/showMessageRequest", "window/showDocument"})
# How strongly a request in flight suggests it caused the server's request.
_CAUSE_RANK = {
    "workspace/executeCommand": 3,
    "codeAction/resolve": 2,
    "textDocument/codeAction": 2,
    "textDocument/rename": 1,
}


@dataclass(frozen=True, slots=True)
class Cause:
    """The client a server request belongs to, and whether it is still connected."""

    client: ClientSession | None
    method: str | None
    gone: bool = False


def find_cause(instance: Instance) -> Cause:
    """The client whose request most plausibly caused a server request arriving now."""
    best_key: tuple[int, float, int] | None = None
    best: Cause | None = None
    for entry in instance.pending.entries():
        client = entry.client
        if client is None or entry.done is not None:
            continue
        rank = _CAUSE_RANK.get(entry.method, 0)
        gone = client.id not in instance.clients
        if gone and rank == 0:
            # A departed client's hover caused nothing; only its edit requests
            # make the server's request one that nobody may answer.
            continue
        key = (rank, entry.started, entry.server_id)
        if best_key is None or key > best_key:
            best_key = key
            best = Cause(client, entry.method, gone=gone)
    if best is not None:
        return best
    return Cause(instance.last_active_client(), None)


async def route(instance: Instance, server_id: Id, method: str, params: Any) -> None:
    """Ask the causing client, or answer the server when no client can."""
    cause = find_cause(instance)
    client = cause.client
    if client is None or cause.gone:
        why = (
            f"the client whose {cause.method} caused {method} has disconnected"
            if cause.gone
            else f"no client connected to answer {method}"
        )
        log.info("%s: %s; answered by the daemon", instance.name, why)
        await _refuse(instance, server_id, method, why)
        return
    if method == APPLY_EDIT and isinstance(params, dict):
        stale = stale_documents(params.get("edit"), instance.documents)
        if stale:
            why = "the document changed since the server computed this edit: " + "; ".join(stale)
            log.info("%s: %s refused: %s", instance.name, method, why)
            await _refuse(instance, server_id, method, why)
            return
        renumber(params.get("edit"), client_versions(instance.documents, client.id))
        if isinstance(params.get("edit"), dict):
            try:
                params["edit"] = edit_for_client(params["edit"], client.capabilities)
            except ResourceOperationsUnsupported as exc:
                why = f"{client.name} cannot apply this edit: {exc}"
                log.info("%s: %s refused: %s", instance.name, method, why)
                await _refuse(instance, server_id, method, why)
                return
    if method not in KNOWN_ROUTED:
        log.debug("%s: routing unknown server request %s to %s", instance.name, method, client.name)

    async def relay(reply: Envelope) -> None:
        await _send(instance, ev.encode(Envelope(id=server_id, result=reply.result, error=reply.error)))

    async def gone(reason: str) -> None:
        await _refuse(instance, server_id, method, reason)

    client.request(method, params, relay, gone)


async def _refuse(instance: Instance, server_id: Id, method: str, reason: str) -> None:
    """Answer for a client: an edit not applied, or an error for any other request."""
    if method == APPLY_EDIT:
        body = ev.response(server_id, ev.encode_value({"applied": False, "failureReason": reason}))
    else:
        body = ev.error_response(server_id, ErrorCode.REQUEST_FAILED, reason)
    await _send(instance, body)


async def _send(instance: Instance, body: bytes) -> None:
    try:
        await instance.send_to_server(body)
    except ServerUnavailable:
        pass
