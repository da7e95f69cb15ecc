"""Index a root on first use and wait for it, reporting progress: shared by `search` and `mcp`."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lensmux.daemon.cli.connect.control_client import ControlClient, RemoteError

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


def ready_for_search(status: dict[str, Any], *, focused: bool, patient: bool) -> bool:
    """Whether a search now answers well enough: the run is over, or it has written where the user is.

    A run writes first the files editors hold open and those under the directory the
    command ran from (graph/index/builder/runs/order.py). With such a directory (`focused`), the
    search answers once those and anything at all are written; without one (run from
    the root, or the MCP server), once the run is over or, when the caller's patience is
    spent (`patient`), from whatever is written. The answer says its `coverage`.
    """
    if not status.get("running"):
        return True
    if not status.get("chunks"):
        return False
    return patient or (focused and status.get("focus_left") == 0)


def ensure_indexed(
    runtime_dir: Path,
    root: Path,
    progress: Progress,
    timeout: float,
    *,
    focus: Path | None = None,
    patience: float | None = None,
) -> tuple[bool, dict[str, Any]]:
    """Index `root` unless it is, `focus` first, and wait until ready_for_search or `timeout`; (ready, status).

    `patience` (default: `timeout`) is how long the run may go on, from its start, before a search answers
    from part of it.
    """
    started = time.monotonic()
    patience = timeout if patience is None else patience
    # A directory below the root: the daemon indexes the files there first (one elsewhere it ignores).
    focused = focus is not None and focus.resolve() != root.resolve() and focus.resolve().is_relative_to(root.resolve())
    with ControlClient(runtime_dir, timeout=30) as ctl:
        status = _status(ctl, root)
        if status is not None and status.get("chunks") and not status.get("running") and status.get("state") != "error":
            return True, status
        # Starts a run, or tells the one under way where the user is.
        params: dict[str, Any] = {"root": str(root)}
        if focus is not None:
            params["focus"] = str(focus)
        status = ctl.call("lensmux/index", params)
        assert status is not None
        while True:
            waited = time.monotonic() - started
            # Patience counts from the run's start: a later search during a long run answers at once.
            ran = max(waited, float(status.get("elapsed_s") or 0.0))
            if ready_for_search(status, focused=focused, patient=ran >= patience):
                break
            progress(status)
            if waited > timeout:
                return False, status
            time.sleep(0.3)
            status = _status(ctl, root) or status
        progress(status)
        return not status.get("error"), status
