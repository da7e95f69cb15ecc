"""Cancelling at the server, shielded from servers whose cancellation is broken.

Every path that gives up on a request (a client's `$/cancelRequest`, a
timeout, a client leaving, the daemon's own request abandoned by a search
budget) ends here. Some servers mishandle a cancel so badly that the one
process every client shares stops answering a whole method (pyright: after
one cancelled `textDocument/references`, every later one fails with
"this._token.cancel is not a function"). For the methods its adapter names,
the daemon withholds the cancel: the asker already has its answer, the server
finishes the request, and its late answer is dropped (or cached).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from lensmux.daemon.mux.errors import ServerUnavailable

if TYPE_CHECKING:
    from lensmux.daemon.mux.instance import Instance

log = logging.getLogger(__name__)


async def cancel_at_server(instance: Instance, server_id: int, method: str, why: str) -> bool:
    """Send `$/cancelRequest` for a request the daemon gave up on, unless the adapter forbids it.

    Returns True if the cancel was sent (or attempted), False if it was withheld.
    """
    if not instance.adapter.forwards_cancel(method):
        # Info, not debug: a slower or degraded answer elsewhere is explained by this line.
        log.info(
            "%s: %s (server id %d) %s; cancel withheld (%s mishandles cancelled %s), the server finishes it",
            instance.name,
            method,
            server_id,
            why,
            instance.key.server,
            method,
        )
        return False
    try:
        await instance.notify_server("$/cancelRequest", {"id": server_id})
    except ServerUnavailable:
        pass
    return True
