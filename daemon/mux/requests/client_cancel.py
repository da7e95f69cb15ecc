"""A client giving up on its requests: its `$/cancelRequest`, or its leaving.

The client is answered (or, gone, no longer), its coalesced places are taken out of
the requests it joined, and a request no other client still waits for is cancelled at
the server through cancel_shield.py, which withholds the cancel where the server
mishandles it. Waiting pulls go through diagnostics_pull.py.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from lensmux.daemon.mux.diagnostics import diagnostics_pull
from lensmux.daemon.mux.requests.answers import forget_inflight
from lensmux.daemon.wire.envelope import ErrorCode

if TYPE_CHECKING:
    from lensmux.daemon.mux.clients.client_session import ClientSession
    from lensmux.daemon.mux.instance import Instance


async def cancel(instance: Instance, client: ClientSession, params: Any) -> None:
    """The client's `$/cancelRequest`: it is answered as cancelled now, whatever the server does."""
    if not isinstance(params, dict) or "id" not in params:
        return
    cid = params["id"]
    entry = instance.pending.find_client(client, cid)
    if entry is None:
        if not diagnostics_pull.cancel_parked(instance, client, cid):
            _cancel_follower(instance, client, cid)
        return
    if entry.detached:
        return
    # The client gets its answer now; the server's late one is dropped.
    entry.detached = True
    client.reply_error(entry.client_id, ErrorCode.REQUEST_CANCELLED, "request cancelled")
    if entry.followers:
        return
    if instance.adapter.forwards_cancel(entry.method):
        forget_inflight(instance, entry)
    # Otherwise the server finishes it anyway (cancel_shield.py), and an identical request
    # joins it rather than adding another whole run of the same work to the shared server.
    await instance.cancel_at_server(entry.server_id, entry.method, f"cancelled by {client.name}")


def _cancel_follower(instance: Instance, client: ClientSession, cid: Any) -> None:
    for leader in instance.inflight.values():
        for i, (follower, fid) in enumerate(leader.followers):
            if follower is client and fid == cid:
                del leader.followers[i]
                client.reply_error(cid, ErrorCode.REQUEST_CANCELLED, "request cancelled")
                return


async def abandon(instance: Instance, client: ClientSession) -> None:
    """The client left: its requests answer nobody, and those no one else joined are cancelled."""
    for entry in instance.pending.of_client(client):
        if not entry.detached:
            entry.detached = True
            if not entry.followers:
                forget_inflight(instance, entry)
                await instance.cancel_at_server(entry.server_id, entry.method, f"abandoned: {client.name} left")
    for leader in instance.inflight.values():
        leader.followers[:] = [(c, i) for c, i in leader.followers if c is not client]
