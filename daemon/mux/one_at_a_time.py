"""Requests a server must get one at a time: a new one cancels the one it is working on.

pyright's Find References cancels its previous Find References when the next one
arrives (`onReferences` cancels its pending source first), so two editors asking
at once would each cut the other's answer short, which neither would see with a
pyright of its own. For the methods the adapter lists (`one_at_a_time`), the daemon
sends the next request only once the server has answered the previous one (or the
request was given up); identical requests still join the one in flight, and a
queued request nobody waits for any more is never sent.
"""

from __future__ import annotations

import logging
import math
from typing import TYPE_CHECKING

import anyio

from lensmux.daemon.mux.answers import forget_inflight
from lensmux.daemon.mux.errors import ServerUnavailable

if TYPE_CHECKING:
    from lensmux.daemon.mux.instance import Instance
    from lensmux.daemon.mux.pending import Pending

log = logging.getLogger(__name__)


class OneAtATime:
    """The queue of one instance's requests that must reach its server one at a time."""

    def __init__(self) -> None:
        self._send, self._receive = anyio.create_memory_object_stream[tuple["Pending", bytes]](math.inf)

    def submit(self, entry: Pending, body: bytes) -> None:
        """Send `body` (the request of `entry`) once the server has none of these in flight."""
        self._send.send_nowait((entry, body))

    async def run(self, instance: Instance) -> None:
        """Send the queued requests in order, each after the previous one left the pending table."""
        async for entry, body in self._receive:
            if instance.pending.get(entry.server_id) is not entry:
                continue  # given up on, or the server it was for is gone
            if entry.client is not None and entry.detached and not entry.followers:
                # Cancelled while queued and nobody joined it: the server never needs to see it,
                # and nobody may join it any more.
                instance.pending.pop(entry.server_id)
                forget_inflight(instance, entry)
                continue
            entry.gone = anyio.Event()
            try:
                await instance.send_to_server(body)
            except ServerUnavailable as exc:
                log.info("%s: %s (server id %d) not sent: %s", instance.name, entry.method, entry.server_id, exc)
                continue
            await entry.gone.wait()
