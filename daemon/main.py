"""`lensmux serve --foreground`: logging, adopted sockets, the event loop, the exit status."""

from __future__ import annotations

import importlib.util
import logging
import os
from pathlib import Path
from typing import Any

import anyio

from lensmux.daemon.app import Daemon
from lensmux.daemon.config import Config
from lensmux.daemon.mux.clients.listeners import ListenerError, prepare_runtime_dir
from lensmux.daemon.runtime_lock import DaemonLockHeld, RuntimeLock
from lensmux.daemon.service.activation import adopt_sockets
from lensmux.daemon.service.errors import ServiceError
from lensmux.daemon.service.logsetup import configure_logging
from lensmux.daemon.service.notify import Notifier

log = logging.getLogger("lensmux")


def serve_foreground(config: Config, runtime_dir: Path, config_path: Path | None, log_level: str | None) -> int:
    """Run the daemon until SIGTERM/SIGINT; exit status 0 on a clean stop.

    A daemon that finds another one holding the runtime directory's lock exits
    at once with status 0: concurrent autostarts end with exactly one daemon.
    """
    configure_logging(log_level or config.daemon.log_level)
    try:
        prepare_runtime_dir(runtime_dir)
        lock = RuntimeLock.acquire(runtime_dir)
    except DaemonLockHeld as exc:
        log.info("%s; this one exits", exc)
        return 0
    except (ListenerError, OSError) as exc:
        log.error("runtime directory %s: %s", runtime_dir, exc)
        return 1
    try:
        return _serve_locked(config, runtime_dir, config_path)
    finally:
        lock.release()


def _serve_locked(config: Config, runtime_dir: Path, config_path: Path | None) -> int:
    # Both read and then clear their environment, so servers never inherit them.
    notifier = Notifier.from_environ()
    try:
        adopted = adopt_sockets()
    except ServiceError as exc:
        log.error("socket activation: %s", exc)
        return 1
    daemon = Daemon(config, runtime_dir, config_path=config_path, notifier=notifier)
    try:
        loop = event_loop_choice(config.daemon.event_loop, os.environ.get(EVENT_LOOP_ENV))
    except UnknownEventLoop as exc:
        log.error("%s", exc)
        return 1
    log.info("event loop: %s", loop)
    try:
        anyio.run(daemon.run, adopted, backend="asyncio", backend_options=_backend_options(loop))
    except ListenerError as exc:
        log.error("%s", exc)
        return 1
    except KeyboardInterrupt:
        return 0
    return 0


EVENT_LOOP_ENV = "LENSMUX_EVENT_LOOP"


class UnknownEventLoop(ValueError):
    """LENSMUX_EVENT_LOOP names no event loop lensmux knows."""


def event_loop_choice(configured: str, override: str | None) -> str:
    """`uvloop` or `asyncio`: the environment's choice over the configuration's, "auto" by availability.

    uvloop is preferred because it roughly halves what each event-loop turn costs
    (docs/benchmarks.md, the floor under the daemon); the stdlib loop stays fully supported.
    """
    wanted = (override or configured).strip().lower()
    if wanted not in ("auto", "asyncio", "uvloop"):
        raise UnknownEventLoop(f"{EVENT_LOOP_ENV}={override!r}: expected auto, asyncio or uvloop")
    available = importlib.util.find_spec("uvloop") is not None
    if wanted == "uvloop" and not available:
        log.warning("uvloop is not installed; using the stdlib asyncio loop")
        return "asyncio"
    if wanted == "auto":
        return "uvloop" if available else "asyncio"
    return wanted


def _backend_options(loop: str) -> dict[str, Any]:
    return {"use_uvloop": loop == "uvloop"}
