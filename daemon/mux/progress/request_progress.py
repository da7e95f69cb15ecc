"""The progress a server shows while it works on a request: whose it is, and telling it to every asker.

pyright shows "Finding references" (`$/progress` begin, end) for every references request of a
client that can show progress: on the client's `workDoneToken` if it gave one, else on a token
it creates (window/workDoneProgress/create) right when it starts on the request. Two things
would keep a client from seeing what its own server would have shown it:

- **Whose it is.** The create carries nothing but the token. With other clients' requests in
  flight, the most recent of them is often not the one the server is working on (a busy
  editor's hover sent a moment after an agent's references). When the adapter can tell from
  the begin which method the progress is for, the owner is the oldest request of that method
  that was in flight at the create, carried no token of its own and has no progress yet: the
  server starts on requests in the order it reads them, and creates the token as it starts.
- **Answers the server did not compute again.** A follower (coalesced onto an identical
  request in flight) or a cached answer comes without the server's progress. The daemon keeps
  what the server last showed for each method, and shows it to such a client right before its
  answer: on the client's own token, else on a token the daemon creates for it.
"""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING, Any

from lensmux.daemon.wire import envelope as ev

if TYPE_CHECKING:
    from lensmux.daemon.mux.clients.client_session import ClientSession
    from lensmux.daemon.mux.instance import Instance
    from lensmux.daemon.mux.requests.pending import Pending

PROGRESS_CREATE = "window/workDoneProgress/create"
# A report-heavy run is kept by its begin, its first reports and its end: enough to be told the
# same kinds of thing; how many reports a run sends is timing anyway.
_MAX_VALUES = 8
_MAX_RUNNING = 256


def has_own_token(entry: Pending) -> bool:
    """Whether the request carried the client's own workDoneToken (the server reports on that, creates none)."""
    return any(token.endswith("/workDoneToken") for token in entry.tokens)


def owner(instance: Instance, in_flight: list[Pending], begin: dict[str, Any]) -> Pending | None:
    """The request a server-created progress is for, from what was in flight at its create."""
    method = instance.adapter.progress_request_method(begin)
    if method is None:
        # The adapter cannot tell: the request that reached the server last.
        return max(in_flight, key=lambda entry: entry.started, default=None)
    for entry in in_flight:  # oldest first: the pending table keeps the order of sending
        if (
            entry.method == method
            and not entry.progress_shown
            and not has_own_token(entry)
            and instance.pending.get(entry.server_id) is entry  # not answered meanwhile
        ):
            entry.progress_shown = True
            return entry
    return None


class ShownProgress:
    """What the server last showed, per method, while it worked on a request; told again to later askers."""

    def __init__(self) -> None:
        self._last: dict[str, list[dict[str, Any]]] = {}
        self._running: dict[Any, tuple[str, list[dict[str, Any]]]] = {}
        self._tokens = itertools.count(1)

    def began(self, token: Any, method: str, value: dict[str, Any]) -> None:
        """A request's progress began on `token` (server-created or the asker's own)."""
        if len(self._running) >= _MAX_RUNNING:
            # Runs whose end never came (their asker left first) make room; the oldest go.
            del self._running[next(iter(self._running))]
        self._running[token] = (method, [value])

    def progressed(self, token: Any, value: dict[str, Any]) -> None:
        """A report or end on a token; an end makes the run what the method shows."""
        run = self._running.get(token)
        if run is None:
            return
        method, values = run
        if value.get("kind") == "end":
            del self._running[token]
            self._last[method] = [*values, value]
        elif len(values) < _MAX_VALUES - 1:
            values.append(value)

    def forget_running(self) -> None:
        """The server exited: what it had begun will never end."""
        self._running.clear()

    def tell(self, client: ClientSession, method: str, token: Any) -> None:
        """Show `client` what the server showed for `method` last, on its own `token` if it gave one."""
        values = self._last.get(method)
        if not values:
            return
        if token is None:
            if not client.supports_progress:
                return
            token = f"lensmux-progress-{next(self._tokens)}"
            # The client hears of the token before any $/progress with it (as from the server).
            client.request(PROGRESS_CREATE, {"token": token})
        for value in values:
            client.send(ev.notification("$/progress", ev.encode_value({"token": token, "value": value})))


def on_client_token(instance: Instance, token: str, value: Any) -> None:
    """Progress on a client's own token (rewritten `lensmux/<client>/<server id>/workDoneToken`)."""
    if not isinstance(value, dict) or not token.endswith("/workDoneToken"):
        return
    if value.get("kind") != "begin":
        instance.shown_progress.progressed(token, value)
        return
    server_id = token.split("/")[2]
    entry = instance.pending.get(int(server_id)) if server_id.isdigit() else None
    if entry is not None:
        instance.shown_progress.began(token, entry.method, value)


def tell_followers(instance: Instance, entry: Pending) -> None:
    """Before the answer: each follower sees the progress its own request would have shown."""
    for follower, fid in entry.followers:
        instance.shown_progress.tell(follower, entry.method, entry.follower_tokens.get((follower.id, fid)))


def work_done_token(params: Any) -> Any:
    """The client's own workDoneToken in a request's decoded params, if any."""
    return params.get("workDoneToken") if isinstance(params, dict) else None
