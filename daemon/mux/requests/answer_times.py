"""How long one server takes to answer each method, and so how long a request sent now would wait.

A search's expansion has a time budget. At a server that answers one request at a time
(pyright: about 250 ms for each call-hierarchy question at 300k lines) a request sent
behind others comes back only after all of them, and one that cannot come back within
what is left of the budget costs the next question its place in the queue and is given up on
anyway. The search asks `expected` first and does not send such a request
(graph/search/gateway.py, `LspCalls.call`).

Answer times are the server's own: for a server answering in turn, from the later of the
request's arrival and the previous answer, so time spent queued is not counted twice.
Every answered request counts, a client's as the daemon's own; errors and cancelled ones do not.
"""

from __future__ import annotations

import time
from collections.abc import Iterable

from lensmux.daemon.mux.requests.pending import Pending

# Weight of the newest answer in a method's running mean: a few answers follow a server
# that slows down as its workspace is analysed, one odd answer moves it little.
_NEWEST = 0.25


class AnswerTimes:
    """A running mean of one server's answer time per method."""

    def __init__(self, in_turn: bool) -> None:
        self._in_turn = in_turn
        self._mean: dict[str, float] = {}
        self._last_answer = 0.0

    def answered(self, entry: Pending, now: float | None = None) -> None:
        """The server answered `entry` with a result."""
        now = time.monotonic() if now is None else now
        began = max(entry.started, self._last_answer) if self._in_turn else entry.started
        self._last_answer = now
        took = max(0.0, now - began)
        mean = self._mean.get(entry.method)
        self._mean[entry.method] = took if mean is None else mean + _NEWEST * (took - mean)

    def failed(self, now: float | None = None) -> None:
        """The server answered with an error: it is free for the next request all the same."""
        self._last_answer = time.monotonic() if now is None else now

    def expected(self, method: str, in_flight: Iterable[Pending], now: float | None = None) -> float | None:
        """Seconds until an answer to `method` sent now comes back; None before the server answered one."""
        mean = self._mean.get(method)
        if mean is None:
            return None
        if not self._in_turn:
            return mean
        now = time.monotonic() if now is None else now
        ahead = 0.0
        oldest: Pending | None = None
        for entry in in_flight:
            ahead += self._mean.get(entry.method, 0.0)
            if oldest is None or entry.server_id < oldest.server_id:
                oldest = entry
        if oldest is not None:
            # The oldest is under way: what it has done since it began is behind it.
            done = now - max(oldest.started, self._last_answer)
            ahead -= min(max(0.0, done), self._mean.get(oldest.method, 0.0))
        return ahead + mean
