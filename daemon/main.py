"""`lensmux serve --foreground`: logging, adopted sockets, the event loop, the exit status."""

from __future__ import annotations

import logging
from pathlib import Path

import anyio

from lensmux.daemon.app import Daemon
from lensmux.daemon.config import Config
from lensmux.daemon.mux.listeners import ListenerError, prepare_runtime_dir
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
        anyio.run(daemon.run, adopted)
    except ListenerError as exc:
        log.error("%s", exc)
        return 1
    except KeyboardInterrupt:
        return 0
    return 0
