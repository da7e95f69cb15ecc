"""One language server per (server config, workspace root): the state its clients share.

The instance is what clients attach to and what the daemon asks its own
questions through. Its supervisor (supervisor.py) starts and restarts the
process; routing.py (client → server) and server_routing.py (server → client)
move the messages; this module owns the state they share.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from typing import Any

import anyio
from anyio.abc import TaskStatus
from msgspec import Raw

from lensmux.adapters.base import Adapter
from lensmux.adapters.spec import ServerConfig
from lensmux.daemon.config import DaemonConfig
from lensmux.daemon.mux.clients.client_session import ClientSession
from lensmux.daemon.mux.diagnostics import diagnostics_nudge
from lensmux.daemon.mux.diagnostics.diagnostics import DiagnosticsStore
from lensmux.daemon.mux.documents.documents import DocumentStore, ServerNotice
from lensmux.daemon.mux.errors import (
    CircuitOpen,
    ExitRecord,
    InstanceKey,
    RequestTimedOut,
    ServerRequestFailed,
    ServerUnavailable,
)
from lensmux.daemon.mux.lifecycle.breaker import BreakerState, CircuitBreaker
from lensmux.daemon.mux.lifecycle.memory_watch import MemorySample
from lensmux.daemon.mux.lifecycle.server_link import ServerLink
from lensmux.daemon.mux.lifecycle.warmup import Warmup
from lensmux.daemon.mux.progress.prologue import Prologue
from lensmux.daemon.mux.progress.request_progress import ShownProgress
from lensmux.daemon.mux.requests import own_requests
from lensmux.daemon.mux.requests.cache import ResponseCache
from lensmux.daemon.mux.requests.cancel_shield import cancel_at_server
from lensmux.daemon.mux.requests.own_slot import OwnRequestSlot
from lensmux.daemon.mux.requests.pending import Pending, PendingTable
from lensmux.daemon.mux.supervisor import Supervisor
from lensmux.daemon.mux.workspace.registrations import RegistrationTable
from lensmux.daemon.mux.workspace.workspace_folders import WorkspaceFolders
from lensmux.daemon.wire import envelope as ev
from lensmux.daemon.wire.envelope import ErrorCode
from lensmux.daemon.wire.framing import FrameLimits

log = logging.getLogger(__name__)


class Instance:
    """State of one shared server: clients, documents, requests, registrations."""

    def __init__(self, key: InstanceKey, config: ServerConfig, adapter: Adapter, daemon: DaemonConfig) -> None:
        self.key = key
        self.config = config
        self.adapter = adapter
        self.daemon_config = daemon
        self.limits = FrameLimits(daemon.max_header_bytes, daemon.max_body_bytes)
        self.state = "starting"
        self.clients: dict[int, ClientSession] = {}
        self.documents = DocumentStore()
        self.pending = PendingTable()
        self.registrations = RegistrationTable()
        self.diagnostics = DiagnosticsStore()
        self.progress_routes: dict[Any, set[int]] = {}
        # Server-created tokens before their begin, with the requests in flight at their create.
        self.progress_pending: dict[Any, list[Pending]] = {}
        # What the server showed while working on a request, for the askers it did not work for.
        self.shown_progress = ShownProgress()
        self.folders = WorkspaceFolders(key.root, covers_root=key.workspace)
        self.client_tokens: dict[str, tuple[ClientSession, Any]] = {}
        self.init_params: dict[str, Any] | None = None
        # The server's own InitializeResult; each client gets client_view's version of it.
        self.init_result: Raw | None = None
        self.link: ServerLink | None = None
        self.restarts = 0
        self.last_exit: ExitRecord | None = None
        self.requests_served = 0
        # When the daemon last sent the server a notification of its own (a file event, a document it opened).
        self.notified_at = 0.0
        # When a source file of the server's languages under the root last changed on disk (diskwatch.py):
        # an agent writing files with its own tools speaks to no server, but is at work as an editor that types.
        self.disk_changed_at = 0.0
        self.created = time.time()
        self.idle_since: float | None = time.monotonic()
        self.failure: str | None = None
        self._params_set = anyio.Event()
        self._ready = anyio.Event()
        # Mirrors `_ready.is_set()` for `ready`, which every request asks (a plain read).
        self._ready_set = False
        self._stopped = anyio.Event()
        self._last_client: ClientSession | None = None
        # Clients attaching, waiting for the server to be ready (joining.py).
        self.waiting = 0
        self.breaker = CircuitBreaker(self.name, daemon.breaker)
        self.cache = ResponseCache(daemon.cache.max_bytes, daemon.cache.enabled)
        self.warmup = Warmup(self.name, adapter, self.cache, daemon.cache.warmup_quiet)
        self.prologue = Prologue(self.name, adapter.restatement_key)
        self.inflight: dict[bytes, Pending] = {}
        # The daemon's own requests in flight, by cache key: an identical one joins (own_requests.py).
        self.own_inflight: dict[bytes, Pending] = {}
        # Learning and the bind walk: one of their requests in flight at a time, together (own_slot.py).
        self.own_slot = OwnRequestSlot(self.name)
        self.doc_lock = anyio.Lock()
        # Called with a URI when a client saves it (the index re-reads the file).
        self.on_saved: list[Callable[[str], None]] = []
        # Called with a URI once a client's edit is applied (the index reads the daemon's text).
        self.on_changed: list[Callable[[str], None]] = []
        self.supervisor = Supervisor(self)
        self.memory = MemorySample()

    @property
    def name(self) -> str:
        """`server@root`, for logs, with its language when not the default one's."""
        key = self.key
        language = "" if key.language is None else f" ({key.language})"
        return f"{key.server}@{key.root}" + ("" if key.workspace else " (no workspace)") + language

    @property
    def ready(self) -> bool:
        """Initialized and serving."""
        return self._ready_set and self.link is not None

    @property
    def stopped(self) -> bool:
        """The supervisor has ended for good."""
        return self._stopped.is_set()

    @property
    def marked_ready(self) -> bool:
        """The server answered `initialize` and has not gone since (`ready` also wants its link)."""
        return self._ready_set

    # -- clients (a client's join: joining.py) ----------------------------

    def supply_params(self, client_params: dict[str, Any]) -> None:
        """The first client's (or the daemon's) initialize params start the server; later ones change nothing."""
        if self.init_params is None:
            self.init_params = self.adapter.initialize_params(
                client_params, self.key.root, self.daemon_pid, workspace=self.key.workspace, language=self.key.language
            )
            self._params_set.set()

    def ensure_started(self, client_params: dict[str, Any]) -> None:
        """Start the server for the daemon's own use if no client has yet."""
        self.supply_params(client_params)
        if not self.clients:
            # The daemon's own use counts as activity for the idle timer.
            self.idle_since = time.monotonic()

    def touch(self, client: ClientSession) -> None:
        """Remember the most recently active client for unrouted server requests."""
        self._last_client = client

    def quiet_for(self, seconds: float) -> bool:
        """No client message and no source file changed on disk for `seconds`, and no client request in flight."""
        return self.activity_within(seconds) is None

    def activity_within(self, seconds: float) -> str | None:
        """What was going on at this server in the last `seconds` (None: nothing), for `lensmux status`."""
        if self.pending.clients_waiting():
            return "a client's request in flight"
        now = time.monotonic()
        # Each session stamps its reads already (ClientSession.last_active): nothing added per message.
        if now - max((c.last_active for c in self.clients.values()), default=0.0) < seconds:
            return "a client spoke"
        if now - self.disk_changed_at < seconds:
            return "source files changing on disk"
        return None

    def last_active_client(self) -> ClientSession | None:
        """The client a server request with no obvious owner goes to."""
        owner = self.pending.most_recent_client()
        if owner is not None and owner.id in self.clients:
            return owner
        if self._last_client is not None and self._last_client.id in self.clients:
            return self._last_client
        return max(self.clients.values(), key=lambda c: c.last_active, default=None)

    async def wait_ready(self, timeout: float) -> bool:
        """Wait up to `timeout` for the server to be initialized; False if it is not."""
        with anyio.move_on_after(timeout):
            while not self.ready and not self.stopped:
                await self.until_ready_or_stopped()
        return self.ready

    async def refusal(self, method: str) -> str | None:
        """Why a client's request of `method` cannot go to the server now; None when it can.

        The breaker rejects it, or the server is not up within the method's timeout.
        """
        breaker = self.breaker
        # A closed breaker allows without changing state: only ask it when it is not.
        if breaker.state is not BreakerState.CLOSED and not breaker.allow():
            return breaker.rejection()
        if not self.ready and not await self.wait_ready(self.config.timeouts.for_method(method)):
            return f"{self.key.server} is not running ({self.state})"
        return None

    # -- the daemon's own requests ----------------------------------------

    async def request(self, method: str, params: Any, timeout: float | None = None, *, background: bool = False) -> Any:
        """Send a request of the daemon's own (cached, joined, breaker-guarded) and return its result.

        `background`: asked in a quiet moment for no one (learning); the caller holds `own_slot`.
        """
        if not self.clients:
            self.idle_since = time.monotonic()
        limit = timeout or self.config.timeouts.for_method(method)
        return await own_requests.request(self, method, params, limit, background=background)

    def caching_allowed(self, method: str) -> bool:
        """Cross-file results are not cached while the server is warming up or indexing (warmup.py)."""
        from lensmux.daemon.mux.requests.cache import WORKSPACE_METHODS

        return not (method in WORKSPACE_METHODS and self.warmup.busy())

    def note_failure(self, reason: str) -> None:
        """A timeout or transport error; a server that stops answering is restarted."""
        self.breaker.record_failure(reason)
        if self.breaker.state.value == "open":
            self.supervisor.kill(f"unresponsive: {reason}")

    async def send_to_server(self, body: bytes) -> None:
        """Write to the current server process; a dead pipe is the supervisor's to notice."""
        link = self.link
        if link is None:
            raise ServerUnavailable(f"{self.name} is not running ({self.state})")
        try:
            await link.writer.send(body)
        except (OSError, anyio.BrokenResourceError, anyio.ClosedResourceError) as exc:
            raise ServerUnavailable(f"{self.name}: write failed: {exc}") from exc

    async def sync_documents(self, mutate: Callable[[], list[ServerNotice]]) -> None:
        """Change the document store and tell the server, atomically with respect to (re)initialization.

        While the server is not ready the notices are dropped: the replay that
        follows `initialize` sends the store's current state instead, and the
        lock keeps a change from slipping between that replay and readiness.
        """
        async with self.doc_lock:
            notices = mutate()
            if not self.ready:
                log.debug("%s: server not ready; %d document notices left to the replay", self.name, len(notices))
            for notice in notices:
                doc = notice.params.get("textDocument", {})
                if self.ready:
                    if log.isEnabledFor(logging.DEBUG):
                        change = notice.params.get("contentChanges", doc.get("text"))
                        log.debug(
                            "%s: %s %s v%s %.200r", self.name, notice.method, doc.get("uri"), doc.get("version"), change
                        )
                    try:
                        await self.notify_server(notice.method, notice.params)
                    except ServerUnavailable:
                        pass
                    if notice.method != "textDocument/didClose" and isinstance(doc.get("version"), int):
                        diagnostics_nudge.expect(self, doc["uri"], doc["version"])
                # Only once the change is written: a request sent before it would
                # otherwise carry the new generation yet be answered from the old
                # text, and that stale answer would be kept. Opening or closing the
                # file as saved (the daemon's own opens, for a search) changes nothing
                # for a server that reads unopened files from disk (the adapter says).
                unchanged = (
                    not self.adapter.opening_saved_files_changes_answers
                    and notice.pristine_epoch is not None
                    and notice.pristine_epoch == self.cache.disk_epoch
                )
                if isinstance(doc.get("uri"), str) and not unchanged:
                    self.cache.document_changed(doc["uri"])

    async def notify_server(self, method: str, params: Any) -> None:
        """Send a notification the daemon built."""
        # pyright postpones its analysis to 250 ms after any request while one is scheduled: the
        # bind walk waits for this to be as old as a client's last message (bind_walk.py).
        self.notified_at = time.monotonic()
        await self.send_to_server(ev.notification(method, ev.encode_value(params)))

    async def cancel_at_server(self, server_id: int, method: str, why: str) -> None:
        """Best-effort `$/cancelRequest` for a request the daemon gave up on (cancel_shield.py decides)."""
        await cancel_at_server(self, server_id, method, why)

    # -- lifecycle (driven by the supervisor) ----------------------------

    def stop(self) -> None:
        """Ask the supervisor to shut the server down and end."""
        self.supervisor.stop()

    async def run_task(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Supervise the server until stopped, idle or hopelessly failing."""
        await self.supervisor.run_task(task_status=task_status)

    async def shutdown_server(self) -> None:
        """Polite LSP shutdown + exit; the process stop escalates if ignored."""
        await self.supervisor.shutdown_server()

    async def wait_params(self) -> None:
        """Wait until some client (or the daemon) has supplied initialize parameters."""
        await self._params_set.wait()

    def mark_ready(self) -> None:
        """The server answered `initialize` and has every open document."""
        self.state = "running"
        self._ready.set()
        self._ready_set = True

    def mark_down(self) -> None:
        """The server process is gone; requests wait for the next one."""
        self._renew_ready()

    def mark_stopped(self) -> None:
        """Supervision ended for good."""
        self.state = "stopped"
        self._renew_ready()
        self._stopped.set()

    def _renew_ready(self) -> None:
        # Only a set event is replaced: whoever waits on an unset one keeps waiting on
        # the event that the next mark_ready sets.
        if self._ready.is_set():
            self._ready = anyio.Event()
            self._ready_set = False

    async def until_ready_or_stopped(self) -> None:
        """Return once the server is ready or supervision has ended (events, no polling)."""
        ready, stopped = self._ready, self._stopped

        async def wait_for(event: anyio.Event, scope: anyio.CancelScope) -> None:
            await event.wait()
            scope.cancel()

        async with anyio.create_task_group() as tg:
            tg.start_soon(wait_for, ready, tg.cancel_scope)
            tg.start_soon(wait_for, stopped, tg.cancel_scope)

    def idle_for(self, seconds: float) -> bool:
        """No client attached or waiting for at least `seconds`."""
        if self.clients or self.waiting or self.idle_since is None:
            return False
        return time.monotonic() - self.idle_since >= seconds

    def start_idle_timer(self) -> None:
        """The idle timer starts now, unless a client is attached or waiting."""
        if not self.clients and not self.waiting:
            self.idle_since = time.monotonic()

    @property
    def daemon_pid(self) -> int:
        """The process id servers watch (they exit when it does)."""
        return os.getpid()

    def status(self) -> dict[str, Any]:
        """What `lensmux status` shows of this instance."""
        link = self.link
        return {
            "server": self.key.server,
            "root": str(self.key.root),
            "workspace": self.key.workspace,
            "language": self.key.language,
            "pid": link.pid if link else None,
            "state": self.state,
            "uptime_s": round(time.time() - link.started, 1) if link else 0.0,
            "clients": sorted(self.clients),
            "open_documents": len(self.documents),
            "requests_served": self.requests_served,
            "in_flight": len(self.pending),
            "progress_tokens": len(self.progress_routes) + len(self.progress_pending) + len(self.client_tokens),
            "prologue": self.prologue.status(),
            "restarts": self.restarts,
            "memory_mb": round(self.memory.rss_bytes / (1024 * 1024), 1) if link else 0.0,
            "server_processes": self.memory.processes if link else 0,
            "recycles": self.memory.recycles,
            "last_exit": self.last_exit.reason if self.last_exit else None,
            "indexing": self.adapter.indexing(),
            "warming": self.warmup.warming,
            "prebind": self.warmup.bind_walk.status(),
            "failure": self.failure,
            "breaker": self.breaker.status(),
            "cache": self.cache.status(),
        }


__all__ = [
    "CircuitOpen",
    "ErrorCode",
    "Instance",
    "InstanceKey",
    "RequestTimedOut",
    "ServerRequestFailed",
    "ServerUnavailable",
]
