"""`lensmux serve --foreground`: logging, adopted sockets, the event loop, the exit status."""

from __future__ import annotations

import logging
from pathlib import Path

import anyio

from lensmux.daemon.app import Daemon
from lensmux.daemon.config import Config
from lensmux.daemon.mux.listeners import ListenerError
from lensmux.daemon.service.activation import adopt_sockets
from lensmux.daemon.service.errors import ServiceError
from lensmux.daemon.service.logsetup import configure_logging
from lensmux.daemon.service.notify import Notifier

log = logging.getLogger("lensmux")


def serve_foreground(config: Config, runtime_dir: Path, config_path: Path | None, log_level: str | None) -> int:
    """Run the daemon until SIGTERM/SIGINT; exit status 0 on a clean stop."""
    configure_logging(log_level or config.daemon.log_level)
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
