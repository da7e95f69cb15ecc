"""The daemon's own control methods: status, ping, shutdown, and indexing a root (search's are registered by app.py)."""

from __future__ import annotations

import functools
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lensmux.daemon.control import ControlError
from lensmux.daemon.search.errors import IndexServiceError
from lensmux.daemon.wire.envelope import ErrorCode

if TYPE_CHECKING:
    from lensmux.daemon.app import Daemon


def register_methods(daemon: Daemon) -> None:
    """Make the daemon's methods callable over its control socket."""
    methods = {
        "lensmux/status": _status,
        "lensmux/ping": _ping,
        "lensmux/shutdown": _shutdown,
        "lensmux/index": _index,
        "lensmux/indexStatus": _index_status,
        "lensmux/publish": _publish,
    }
    for name, method in methods.items():
        daemon.control.register(name, functools.partial(method, daemon))


def _root_param(params: Any) -> Path:
    root = params.get("root") if isinstance(params, dict) else None
    if not isinstance(root, str) or not root:
        raise ControlError(ErrorCode.INVALID_PARAMS, "params.root must be a directory path")
    return Path(root)


async def _index(daemon: Daemon, params: Any) -> Any:
    if daemon.searching is None:
        raise ControlError(ErrorCode.SERVER_NOT_INITIALIZED, "daemon is starting")
    try:
        overlay = params.get("overlay", True) is not False
        return await daemon.searching.index(_root_param(params), params.get("focus"), overlay=overlay)
    except IndexServiceError as exc:
        raise ControlError(ErrorCode.INVALID_PARAMS, str(exc)) from None


async def _publish(daemon: Daemon, params: Any) -> Any:
    if daemon.searching is None:
        raise ControlError(ErrorCode.SERVER_NOT_INITIALIZED, "daemon is starting")
    try:
        return await daemon.searching.publish(_root_param(params))
    except IndexServiceError as exc:
        raise ControlError(ErrorCode.INVALID_PARAMS, str(exc)) from None


async def _index_status(daemon: Daemon, params: Any) -> Any:
    if daemon.searching is None:
        raise ControlError(ErrorCode.SERVER_NOT_INITIALIZED, "daemon is starting")
    summary = daemon.searching.index_status(_root_param(params))
    if summary is None:
        raise ControlError(ErrorCode.INVALID_PARAMS, f"{params.get('root')} is not indexed")
    return summary


async def _ping(daemon: Daemon, params: Any) -> Any:
    return {"pid": os.getpid()}


async def _shutdown(daemon: Daemon, params: Any) -> Any:
    daemon.request_stop()
    return {"stopping": True}


async def _status(daemon: Daemon, params: Any) -> Any:
    registry = daemon.registry
    if registry is None:
        raise ControlError(ErrorCode.SERVER_NOT_INITIALIZED, "daemon is starting")
    return {
        "pid": os.getpid(),
        "uptime_s": round(time.time() - daemon.started, 1),
        "runtime_dir": str(daemon.runtime_dir),
        "config": daemon.config.source,
        "reloads": daemon.reloads,
        "last_reload_error": daemon.last_reload_error,
        "servers": sorted(daemon.config.enabled_servers()),
        "instances": [inst.status() for inst in registry.instances()],
        "clients": [c.status() for c in daemon.clients.values()],
        "index": daemon.searching.status() if daemon.searching else None,
    }
