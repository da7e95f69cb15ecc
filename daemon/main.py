"""`lensmux serve --foreground`: logging, the event loop, the exit status."""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import anyio

from lensmux.daemon.app import Daemon
from lensmux.daemon.config import Config
from lensmux.daemon.listeners import ListenerError

log = logging.getLogger("lensmux")


def configure_logging(level: str) -> None:
    """Plain timestamped lines on stderr."""
    logging.basicConfig(
        level=getattr(logging, level.upper(), logging.INFO),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )


def serve_foreground(config: Config, runtime_dir: Path, config_path: Path | None, log_level: str | None) -> int:
    """Run the daemon until SIGTERM/SIGINT; exit status 0 on a clean stop."""
    configure_logging(log_level or config.daemon.log_level)
    daemon = Daemon(config, runtime_dir)
    try:
        anyio.run(daemon.run)
    except ListenerError as exc:
        log.error("%s", exc)
        return 1
    except KeyboardInterrupt:
        return 0
    return 0
