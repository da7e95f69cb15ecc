"""What the symbol cache's integration tests read of a daemon: an index run, its documentSymbol requests, its rows."""

from __future__ import annotations

import sqlite3
import subprocess
from pathlib import Path

from lensmux.graph.index.location import root_slug
from support.daemon_proc import LENSMUX, DaemonProc


def index(daemon: DaemonProc, root: Path) -> None:
    """`lensmux index ROOT --wait` through the daemon's CLI."""
    done = subprocess.run(
        [LENSMUX, "index", str(root), "--runtime-dir", str(daemon.runtime_dir), "--wait"],
        env=daemon.env,
        capture_output=True,
        text=True,
        timeout=600,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, done.stderr


def asked(daemon: DaemonProc, name: str) -> int:
    """How many documentSymbol requests the daemon sent about files named `name` (its debug log)."""
    return daemon.log_text().count(f"documentSymbol of {name} answered")


def symbol_rows(daemon: DaemonProc, root: Path, rel: str) -> list[tuple[object, ...]]:
    """The symbols the root's index holds for `rel`, in id order."""
    db = Path(daemon.env["XDG_STATE_HOME"]) / "lensmux" / "roots" / root_slug(root) / "index.sqlite"
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        rows = conn.execute(
            "SELECT s.name, s.qualified_name, s.kind, s.detail, s.container, s.depth, s.start_line, s.start_char,"
            " s.end_line, s.end_char, s.sel_start_line FROM symbols s JOIN files f ON f.id = s.file_id"
            " WHERE f.path = ? ORDER BY s.id",
            (rel,),
        ).fetchall()
    return [tuple(r) for r in rows]
