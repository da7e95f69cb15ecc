"""What a fresh server tells a client before it is useful, kept for the clients that join later.

A server of its own greets every client: pyright logs that it starts, where its configuration
is and "Found N source files" (the line agent toolkits wait for before their first request),
clangd reports its background index as progress, other servers send a status notification that
says they are ready. A shared server says all of that once, to whoever was attached then. So each
server process has a *prologue*: the notifications it broadcast from its spawn until it showed it
knows its workspace (the warm-up's end, warmup.py), and the background progress that began in
that time, in order. A client that joins is sent the prologue as it stands, exactly once, at the
moment it joins: the part the server sent before its InitializeResult before that client's own
result, the rest after it; from then on it gets the live messages like everyone else.

The prologue holds the values that hold now, not those of the start: once it has closed, a
notification that restates one of its entries (the same method and text but for numbers, or what
the adapter counts as the same statement, such as pyright's file count after files were added)
replaces that entry where it stands. Progress keeps its create, its begin, its latest report and
its end; a late joiner of a progress still running is added to its routes, so the live reports
and the end reach it too. A client that did not declare `window.workDoneProgress` gets what the
server alone sends such a client instead (adapters: pyright's `pyright/*Progress`), or nothing.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from msgspec import Raw

from lensmux.daemon.mux.progress.progress_routes import PROGRESS_CREATE
from lensmux.daemon.wire import envelope as ev

if TYPE_CHECKING:
    from lensmux.daemon.mux.clients.client_session import ClientSession

log = logging.getLogger(__name__)

# A prologue is the start-up of one process: a few dozen lines for the servers lensmux ships.
# A server that logs without end while it warms up (pyright at trace level) is cut here; its
# progress is still kept, compacted, so a late joiner still hears the server become ready.
MAX_NOTIFICATIONS = 1000
MAX_BYTES = 1024 * 1024


@dataclass(slots=True, eq=False)
class _Line:
    """A notification the server broadcast, as sent (the latest restatement once closed)."""

    method: str
    params: bytes
    body: bytes
    before_result: bool


@dataclass(slots=True, eq=False)
class _Step:
    """One step of a background progress: its create, begin, latest report or end."""

    token: Any
    kind: str  # "create", "begin", "report", "end"
    value: Any = None
    # What the server alone sends a client without window.workDoneProgress (adapter-made).
    fallback: list[bytes] = field(default_factory=list)
    before_result: bool = False


@dataclass(slots=True)
class _Story:
    report: _Step | None = None
    ended: bool = False


Entry = _Line | _Step


@dataclass(frozen=True, slots=True)
class CreateToken:
    """A `window/workDoneProgress/create` request to send the joining client."""

    token: Any


@dataclass(slots=True)
class Greeting:
    """What one joining client is sent: around its InitializeResult, and progress it now follows."""

    before_result: list[bytes | CreateToken]
    after_result: list[bytes | CreateToken]
    # Background progress still running: the client is added to these tokens' routes.
    follows: list[Any]


class Prologue:
    """The start-up messages of one server process, replayed to every client that joins."""

    def __init__(self, name: str, restates: Callable[[str, bytes], bytes]) -> None:
        self.name = name
        # The adapter's notion of "the same statement" (restatement_key).
        self._restates = restates
        self.reset()

    def reset(self) -> None:
        """A new process: it has said nothing yet."""
        self._entries: list[Entry] = []
        self._by_key: dict[bytes, _Line] = {}
        self._stories: dict[Any, _Story] = {}
        self._size = 0
        self._lines = 0
        self._open = True
        self._cut = False
        self.answered_initialize = False

    @property
    def open(self) -> bool:
        """Still recording everything (the server has not yet shown it knows its workspace)."""
        return self._open

    def close(self) -> None:
        """The server is warm: from now on only restatements change the prologue."""
        if self._open:
            self._open = False
            log.debug("%s: prologue closed with %d entries", self.name, len(self._entries))

    def __len__(self) -> int:
        return len(self._entries)

    # -- recording --------------------------------------------------------------------

    def notification(self, method: str, params: bytes, body: bytes) -> None:
        """A notification the server broadcast to every client."""
        key = self._restates(method, params)
        if not self._open:
            known = self._by_key.get(key)
            if known is not None:
                self._size += len(body) - len(known.body)
                known.params, known.body = params, body
            return
        if self._lines >= MAX_NOTIFICATIONS or self._size + len(body) > MAX_BYTES:
            if not self._cut:
                self._cut = True
                log.info("%s: start-up messages past %d kept only as progress", self.name, self._lines)
            return
        line = _Line(method, params, body, not self.answered_initialize)
        self._entries.append(line)
        self._by_key[key] = line
        self._size += len(body)
        self._lines += 1

    def progress_created(self, token: Any) -> None:
        """The server created a progress token for background work (no client asked for it)."""
        if not self._open or token in self._stories:
            return
        self._stories[token] = _Story()
        self._entries.append(_Step(token, "create", before_result=not self.answered_initialize))

    def follows(self, token: Any) -> bool:
        """Whether the prologue keeps this token's progress."""
        return token in self._stories

    def progress(self, token: Any, value: dict[str, Any], fallback: list[bytes]) -> None:
        """A `$/progress` of a kept token (begin, report or end), with its adapter fallback."""
        story = self._stories.get(token)
        if story is None or story.ended:
            return
        kind = value.get("kind")
        if kind == "report" and story.report is not None:
            # Only the latest report holds now; it keeps the place of the first.
            story.report.value, story.report.fallback = value, fallback
            return
        if kind not in ("begin", "report", "end"):
            return
        step = _Step(token, str(kind), value, fallback, before_result=not self.answered_initialize)
        self._entries.append(step)
        if kind == "report":
            story.report = step
        elif kind == "end":
            story.ended = True

    # -- replay -----------------------------------------------------------------------

    def greeting(
        self,
        wants: Callable[[str], bool],
        supports_progress: bool,
        personal: Callable[[str, bytes], bytes | None] = lambda method, params: None,
    ) -> Greeting:
        """What a client joining now is sent.

        `wants` filters extension notifications it did not enable; `personal` gives a line's params
        as the server alone would have said them to this client (the adapter's personal_greeting).
        """
        before: list[bytes | CreateToken] = []
        after: list[bytes | CreateToken] = []
        for entry in self._entries:
            out = before if entry.before_result else after
            if isinstance(entry, _Line):
                if wants(entry.method):
                    own = personal(entry.method, entry.params)
                    out.append(entry.body if own is None else ev.notification(entry.method, Raw(own)))
            elif supports_progress:
                if entry.kind == "create":
                    out.append(CreateToken(entry.token))
                else:
                    progress = {"token": entry.token, "value": entry.value}
                    out.append(ev.notification("$/progress", ev.encode_value(progress)))
            else:
                out.extend(entry.fallback)
        running = [t for t, story in self._stories.items() if not story.ended]
        return Greeting(before, after, running)

    @staticmethod
    def send(client: ClientSession, part: list[bytes | CreateToken]) -> None:
        """Send one part of a greeting to a client, in order."""
        for item in part:
            if isinstance(item, CreateToken):
                client.request(PROGRESS_CREATE, {"token": item.token})
            else:
                client.send(item)

    def status(self) -> dict[str, Any]:
        """What `lensmux status` shows of it."""
        return {"open": self._open, "entries": len(self._entries), "bytes": self._size, "cut": self._cut}
