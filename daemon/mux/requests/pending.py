"""Requests in flight at one server: id rewriting and who gets the answer.

Every request the server sees carries an id from this table's counter; the
entry remembers the client and the client's own id (or, for the daemon's own
requests, an event to wake the waiter). The reverse map lets a client's
`$/cancelRequest` find the server id.
"""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import anyio
from msgspec import UnsetType

from lensmux.daemon.mux.requests.cache import CacheKey
from lensmux.daemon.wire.envelope import Envelope, Id

if TYPE_CHECKING:
    from lensmux.daemon.mux.clients.client_session import ClientSession


@dataclass(slots=True, eq=False)
class Pending:
    """One request in flight at the server."""

    server_id: int
    method: str
    client: ClientSession | None
    client_id: Id | None
    started: float = field(default_factory=time.monotonic)
    # Set for the daemon's own requests: the waiter reads `reply`.
    done: anyio.Event | None = None
    reply: Envelope | None = None
    failure: str | None = None
    # Tokens rewritten in the params, to forget once the answer arrives.
    tokens: list[Any] = field(default_factory=list)
    # Set when the client got its answer elsewhere (cancelled, timed out).
    detached: bool = False
    # Identical concurrent requests share this one server request.
    cache_key: CacheKey | None = None
    generation: int = 0
    # False for an answer computed while the server was warming up: shared with
    # followers, never stored.
    storable: bool = True
    followers: list[tuple[ClientSession, Id]] = field(default_factory=list)
    # A follower's own workDoneToken, by (client id, request id): its progress goes there.
    follower_tokens: dict[tuple[int, Id], Any] = field(default_factory=dict)
    # A server-created progress was found to be this request's (request_progress.owner).
    progress_shown: bool = False
    # The document a documentSymbol or references answer is about (a flat answer names it;
    # index_scope.py keeps its own references first).
    doc_uri: str | None = None
    # codeAction: the server's diagnostics back to the asker's wording (diagnostic_wording.py).
    diagnostics_back: dict[Any, Any] | None = None
    # One of the daemon's own requests asked in a quiet moment (learning, bind walk): own_slot.py.
    background: bool = False


class PendingTable:
    """The in-flight requests of one server."""

    def __init__(self) -> None:
        self._ids = itertools.count(1)
        self._by_server: dict[int, Pending] = {}
        self._by_client: dict[tuple[int, Id], int] = {}
        # Set (and dropped) at the next pop, for whoever waits on an answer (wait_answered).
        self._popped: anyio.Event | None = None

    def __len__(self) -> int:
        return len(self._by_server)

    def add_client(self, method: str, client: ClientSession, client_id: Id) -> Pending:
        """Register a client's request; return the entry with its server id."""
        entry = Pending(next(self._ids), method, client, client_id)
        self._by_server[entry.server_id] = entry
        self._by_client[(client.id, client_id)] = entry.server_id
        return entry

    def add_internal(self, method: str, *, background: bool = False) -> Pending:
        """Register one of the daemon's own requests (`background`: learning's or the bind walk's)."""
        entry = Pending(next(self._ids), method, None, None, done=anyio.Event(), background=background)
        self._by_server[entry.server_id] = entry
        return entry

    def clients_waiting(self) -> bool:
        """Whether a client's request is in flight (the daemon's own do not count)."""
        return bool(self._by_client)

    def pop(self, server_id: Id | UnsetType | None) -> Pending | None:
        """Remove and return the entry for a server's response (none for an id the daemon never sent)."""
        if not isinstance(server_id, int):
            return None
        entry = self._by_server.pop(server_id, None)
        if entry is not None and entry.client is not None and entry.client_id is not None:
            self._by_client.pop((entry.client.id, entry.client_id), None)
        if self._popped is not None:
            self._popped.set()
            self._popped = None
        return entry

    async def wait_answered(self, client: ClientSession, client_id: Id) -> None:
        """Return once the server has answered the client's request `client_id` (at once if none is in flight)."""
        while self.find_client(client, client_id) is not None:
            if self._popped is None:
                self._popped = anyio.Event()
            await self._popped.wait()

    def get(self, server_id: int) -> Pending | None:
        """The entry for a server id, if still in flight."""
        return self._by_server.get(server_id)

    def find_client(self, client: ClientSession, client_id: Id) -> Pending | None:
        """The entry for a client's request id, if still in flight."""
        sid = self._by_client.get((client.id, client_id))
        return self._by_server.get(sid) if sid is not None else None

    def of_client(self, client: ClientSession) -> list[Pending]:
        """Every request of one client still in flight."""
        return [p for p in self._by_server.values() if p.client is client]

    def entries(self) -> list[Pending]:
        """Everything in flight."""
        return list(self._by_server.values())

    def most_recent_client(self) -> ClientSession | None:
        """The client whose request reached the server last and is still open."""
        best: Pending | None = None
        for entry in self._by_server.values():
            if entry.client is not None and not entry.detached and (best is None or entry.started >= best.started):
                best = entry
        return best.client if best else None

    def most_recent(self) -> Pending | None:
        """The request that reached the server last and is still open, the daemon's own included."""
        return max(self._by_server.values(), key=lambda entry: entry.started, default=None)

    def drain(self) -> list[Pending]:
        """Remove and return everything (the server is gone)."""
        entries = list(self._by_server.values())
        self._by_server.clear()
        self._by_client.clear()
        return entries
