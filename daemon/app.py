"""The daemon: binds the sockets, accepts clients, owns every long-lived task.

One task group holds everything: listeners, client sessions, instance
supervisors. Shutdown cancels the listeners first, then stops the servers
politely, then the rest; nothing is left running when `run` returns.
"""

from __future__ import annotations

import functools
import logging
import os
import signal
import socket
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
from anyio.abc import SocketListener, SocketStream, TaskGroup, TaskStatus

from lensmux.daemon import paths
from lensmux.daemon.assist.service import AssistService
from lensmux.daemon.config import Config, ConfigInvalid, load_config
from lensmux.daemon.control import ControlServer
from lensmux.daemon.daemon_methods import register_methods
from lensmux.daemon.mux import routing
from lensmux.daemon.mux.clients import listeners
from lensmux.daemon.mux.clients.client_session import ClientSession
from lensmux.daemon.mux.errors import InstanceError
from lensmux.daemon.mux.instance import Instance
from lensmux.daemon.mux.internal_client import InternalClient
from lensmux.daemon.mux.registry import InstanceRegistry, UnknownRoot
from lensmux.daemon.search.on_demand import SearchOnDemand
from lensmux.daemon.service.activation import listener_from_socket
from lensmux.daemon.service.notify import Notifier, watchdog_task
from lensmux.daemon.wire import envelope as ev
from lensmux.daemon.wire.envelope import Envelope, ErrorCode
from lensmux.daemon.wire.framing import FrameLimits

log = logging.getLogger(__name__)


class Daemon:
    """The running daemon's state, as seen by its control methods."""

    def __init__(
        self, config: Config, runtime_dir: Path, *, config_path: Path | None = None, notifier: Notifier | None = None
    ) -> None:
        self.config = config
        self.config_path = config_path
        self.notifier = notifier or Notifier(None)
        self.runtime_dir = runtime_dir
        self.reloads = 0
        self.last_reload_error: str | None = None
        self._listeners: dict[str, SocketListener] = {}
        self._listener_scopes: dict[str, anyio.CancelScope] = {}
        self._adopted_names: set[str] = set()
        self.started = time.time()
        self.limits = FrameLimits(config.daemon.max_header_bytes, config.daemon.max_body_bytes)
        self.control = ControlServer(self.limits)
        self.clients: dict[int, ClientSession] = {}
        self.registry: InstanceRegistry | None = None
        self._stop = anyio.Event()
        self._tg: TaskGroup | None = None
        self._accept_tg: TaskGroup
        self.on_ready: list[Callable[[], None]] = []
        register_methods(self)
        # Indexes, search and learning, imported and built on first use (search/on_demand.py).
        self.searching: SearchOnDemand | None = None
        self.internal: InternalClient | None = None
        self.assist: AssistService | None = None

    def request_stop(self) -> None:
        """Begin a graceful shutdown."""
        self._stop.set()

    async def run(
        self,
        adopted: dict[str, socket.socket] | None = None,
        *,
        task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
    ) -> None:
        """Serve until asked to stop; `adopted` sockets (socket activation) replace binding."""
        await self._open_listeners(adopted or {})
        async with anyio.create_task_group() as tg:
            self._tg = tg
            self.registry = InstanceRegistry(tg, self.config)
            self.internal = InternalClient(self.registry)
            searching = SearchOnDemand(
                self.config.daemon,
                self.registry,
                self.internal,
                lambda: self.assist is not None and self.assist.active > 0,
                self.config.index.team_dsn(),
            )
            self.searching = searching
            self.registry.on_new_instance.append(self._hook_instance)
            index_scope = anyio.CancelScope()

            async def indexes_task(*, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
                with index_scope:
                    await searching.run_task(task_status=task_status)

            await tg.start(indexes_task)
            self.control.register("lensmux/hybridSearch", searching.hybrid_search)
            self.assist = AssistService(self.internal, searching.hybrid_search)
            self.control.register("lensmux/assist/tools", self.assist.list_tools)
            self.control.register("lensmux/assist/call", self.assist.call)
            if self.config.daemon.http.enabled:
                from lensmux.daemon.search.http_api import HttpApi

                await tg.start(HttpApi(self.control, self.config.daemon.http.port).run_task)
            async with anyio.create_task_group() as accept_tg:
                self._accept_tg = accept_tg
                for name in list(self._listeners):
                    self._start_accepting(name)
                accept_tg.start_soon(self._signal_task)
                await accept_tg.start(watchdog_task, self.notifier, self._healthy)
                accept_tg.start_soon(self._status_task)
                # Stops with the listeners, before the indexes it reads are closed.
                accept_tg.start_soon(searching.learner_task)
                log.info(
                    "lensmux %d serving %s in %s", os.getpid(), ", ".join(sorted(self._listeners)), self.runtime_dir
                )
                self.notifier.ready(self._summary())
                for hook in self.on_ready:
                    hook()
                task_status.started()
                await self._stop.wait()
                log.info("shutting down")
                self.notifier.stopping("shutting down")
                accept_tg.cancel_scope.cancel()
            for listener in self._listeners.values():
                await listener.aclose()
            # Indexes first (they save and close while their servers still answer), then servers.
            index_scope.cancel()
            with anyio.CancelScope(shield=True):
                await searching.wait_closed()
            with anyio.move_on_after(self.config.daemon.shutdown_grace + 2, shield=True):
                await self.registry.shutdown_all()
            tg.cancel_scope.cancel()
        for name in self._listeners:
            if name not in self._adopted_names:
                self._socket_path(name).unlink(missing_ok=True)
        log.info("stopped")

    def _healthy(self) -> bool:
        return not self._stop.is_set()

    def _summary(self) -> str:
        registry = self.registry
        instances = registry.instances() if registry else []
        running = sum(1 for i in instances if i.ready)
        return f"{len(instances)} instances ({running} running), {len(self.clients)} clients"

    async def _status_task(self) -> None:
        last = ""
        while True:
            summary = self._summary()
            if summary != last:
                self.notifier.status(summary)
                last = summary
            await anyio.sleep(5)

    def _start_accepting(self, name: str) -> None:
        scope = anyio.CancelScope()
        self._listener_scopes[name] = scope
        self._accept_tg.start_soon(self._accept_task, name, self._listeners[name], scope)

    def _socket_path(self, name: str) -> Path:
        if name == "lensmux":
            return paths.control_socket(self.runtime_dir)
        return paths.server_socket(self.runtime_dir, name)

    async def _open_listeners(self, adopted: dict[str, socket.socket]) -> None:
        listeners.prepare_runtime_dir(self.runtime_dir)
        names = ["lensmux", *self.config.enabled_servers()]
        try:
            for name, sock in adopted.items():
                if name not in names:
                    log.warning("socket activation passed %r, which is not a configured server; closing it", name)
                    sock.close()
                    continue
                self._listeners[name] = await listener_from_socket(sock)
                self._adopted_names.add(name)
            for name in names:
                if name not in self._listeners:
                    self._listeners[name] = await listeners.bind(self._socket_path(name))
        except BaseException:
            for listener in self._listeners.values():
                await listener.aclose()
            raise

    async def _signal_task(self) -> None:
        with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT, signal.SIGHUP) as signals:
            async for signum in signals:
                log.info("received %s", signal.Signals(signum).name)
                if signum == signal.SIGHUP:
                    await self.reload()
                else:
                    self.request_stop()

    async def reload(self) -> bool:
        """Re-read the configuration; keep the old one (and say why) if the new one is invalid."""
        self.notifier.reloading("reloading configuration")
        try:
            try:
                new = load_config(self.config_path, explicit=self.config_path is not None)
            except ConfigInvalid as exc:
                self.last_reload_error = str(exc)
                for line in str(exc).splitlines():
                    log.error("configuration rejected, keeping the previous one: %s", line)
                return False
            await self._apply(new)
            self.reloads += 1
            self.last_reload_error = None
            return True
        finally:
            self.notifier.ready(self._summary())

    async def _apply(self, new: Config) -> None:
        old_names = set(self.config.enabled_servers())
        new_names = set(new.enabled_servers())
        for name in sorted(new_names - old_names):
            try:
                self._listeners[name] = await listeners.bind(self._socket_path(name))
            except listeners.ListenerError as exc:
                log.error("reload: cannot serve new server %s: %s", name, exc)
                continue
            self._start_accepting(name)
            log.info("reload: serving new server %s", name)
        for name in sorted(old_names - new_names):
            # Removed servers drain: no new clients, connected ones keep their instance.
            self._listener_scopes.pop(name).cancel()
            listener = self._listeners.pop(name)
            await listener.aclose()
            if name not in self._adopted_names:
                self._socket_path(name).unlink(missing_ok=True)
            log.info("reload: server %s removed; its instances drain", name)
        for name in sorted(old_names & new_names):
            if self.config.servers[name].fingerprint() != new.servers[name].fingerprint():
                log.info("reload: server %s changed; new clients get a new instance", name)
        self.config = new
        if self.registry is not None:
            self.registry.config = new
        if self.searching is not None:
            self.searching.configure(new.daemon.search)

    async def _accept_task(self, name: str, listener: SocketListener, scope: anyio.CancelScope) -> None:
        assert self._tg is not None
        with scope:
            while True:
                try:
                    stream = await listener.accept()
                except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                    return
                except OSError as exc:
                    log.warning("%s: accept failed: %s", name, exc)
                    await anyio.sleep(0.1)
                    continue
                self._tg.start_soon(self._connection_task, name, stream)

    async def _connection_task(self, name: str, stream: SocketStream) -> None:
        # A bug met by one connection ends that connection, never the daemon.
        try:
            await self._serve_connection(name, stream)
        except Exception:
            log.exception("%s: connection task failed; closing that connection", name)
            with anyio.CancelScope(shield=True):
                await stream.aclose()

    async def _serve_connection(self, name: str, stream: SocketStream) -> None:
        pid = listeners.peer_allowed(stream, f"{name}.sock")
        if pid is None:
            await stream.aclose()
            return
        if name == "lensmux":
            await self.control.serve(stream)
            return
        client = ClientSession(
            stream, name, limits=self.limits, queue_size=self.config.daemon.client_queue_messages, peer_pid=pid
        )
        self.clients[client.id] = client
        attached: list[Any] = []

        async def handler(session: ClientSession, env: Envelope) -> None:
            if attached:
                await routing.from_client(attached[0], session, env)
                return
            await self._before_initialize(name, session, env, attached)

        try:
            await client.serve(handler)
        finally:
            self.clients.pop(client.id, None)
            if attached:
                with anyio.CancelScope(shield=True):
                    await routing.detach(attached[0], client)
            log.info("%s left %s (%s)", client.name, name, client.close_reason)

    async def _before_initialize(self, name: str, client: ClientSession, env: Envelope, attached: list[Any]) -> None:
        if not env.is_request:
            if env.method == "exit":
                client.close("client exit")
            return
        if env.method != "initialize":
            client.reply_error(env.rid, ErrorCode.SERVER_NOT_INITIALIZED, "the first request must be initialize")
            return
        params = ev.decode_value(env.params)
        if not isinstance(params, dict):
            client.reply_error(env.rid, ErrorCode.INVALID_PARAMS, "initialize params must be an object")
            return
        capabilities = params.get("capabilities") or {}
        if not isinstance(capabilities, dict):
            client.reply_error(env.rid, ErrorCode.INVALID_PARAMS, "initialize params.capabilities must be an object")
            return
        info = params.get("clientInfo")
        client.name = f"{info.get('name', 'client') if isinstance(info, dict) else 'client'}-{client.id}"
        client.capabilities = capabilities
        options = params.get("initializationOptions")
        client.initialization_options = options if isinstance(options, dict) else {}
        client.workspace = {k: params[k] for k in ("workspaceFolders", "rootPath", "rootUri") if k in params}
        assert self.registry is not None
        try:
            # The instance answers the initialize itself, in the middle of its greeting (prologue.py).
            instance = await self.registry.attach(
                name, client, params, lambda result: client.send(ev.response(env.rid, result))
            )
        except UnknownRoot as exc:
            client.reply_error(env.rid, ErrorCode.INVALID_PARAMS, str(exc))
            return
        except InstanceError as exc:
            client.reply_error(env.rid, ErrorCode.REQUEST_FAILED, str(exc))
            return
        attached.append(instance)
        # From now on a request may be routed as soon as it arrives, in the socket's read callback.
        client.route_now = functools.partial(routing.route_request_now, instance)
        # And a question on a file it has just opened may go to the server before the open.
        client.request_first = routing.RequestFirstRoute(instance)

    def _hook_instance(self, instance: Instance) -> None:
        """Saves and edits in an instance's documents reach the indexes."""
        instance.on_saved.append(self._on_saved)
        instance.on_changed.append(lambda uri: self._on_changed(instance, uri))
        # The bind walk waits while any root is being indexed, as learning does (bind_walk.py).
        instance.warmup.bind_walk.gives_way = self._full_run_going

    def _full_run_going(self) -> bool:
        return self.searching is not None and self.searching.full_run_going()

    def _on_saved(self, uri: str) -> None:
        if self.searching is not None:
            self.searching.on_saved(uri)

    def _on_changed(self, instance: Instance, uri: str) -> None:
        # On every edit of every client: nothing to do (not even a closure) while nothing is indexed.
        if self.searching is not None and self.searching.indexing:
            self.searching.on_changed(uri, lambda: _document_text(instance, uri))


def _document_text(instance: Instance, uri: str) -> str | None:
    """The daemon's current text of an open document, None once no client holds it."""
    doc = instance.documents.get(uri)
    return None if doc is None else doc.text
