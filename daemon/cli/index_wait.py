"""Index a root on first use and wait for it, reporting progress: shared by `search` and `mcp`."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lensmux.daemon.cli.control_client import ControlClient, RemoteError

Progress = Callable[[dict[str, Any]], None]


def _status(ctl: ControlClient, root: Path) -> dict[str, Any] | None:
    try:
        status: dict[str, Any] = ctl.call("lensmux/indexStatus", {"root": str(root)})
    except RemoteError:
        return None
    return status


def describe(status: dict[str, Any]) -> str:
    """One line about a run in progress."""
    return (
        f"indexing {status.get('root')}: {status.get('files_done', 0)}/{status.get('files_total', 0)} files, "
        f"{status.get('chunks_done', 0)} chunks"
    )


def ensure_indexed(runtime_dir: Path, root: Path, progress: Progress, timeout: float) -> tuple[bool, dict[str, Any]]:
    """Start indexing `root` if it has no index yet and wait up to `timeout`; (done, last status)."""
    deadline = time.monotonic() + timeout
    with ControlClient(runtime_dir, timeout=30) as ctl:
        status = _status(ctl, root)
        if status is not None and status.get("chunks") and status.get("state") != "error":
            return True, status
        if status is None or not status.get("running"):
            status = ctl.call("lensmux/index", {"root": str(root)})
        assert status is not None
        first_run = int(status.get("runs") or 0)
        while status.get("running") or int(status.get("runs") or 0) < first_run:
            progress(status)
            if time.monotonic() > deadline:
                return False, status
            time.sleep(0.3)
            status = _status(ctl, root) or status
        progress(status)
        return not status.get("error"), status
