"""Issue 23: pyright's documentSymbol answers kept by text for every root (graph/index/builder/caches/symbol_cache.py).

A second root holding a copy of an indexed file gets the same symbol rows without pyright
being asked about it; a file whose text changed, and one with a wildcard import (its
symbols depend on the module it imports), are asked again; a corrupt cache file costs
its hits, not the run. Real pyright; the daemon logs every documentSymbol it sends
(`documentSymbol of NAME answered`, debug level, which test daemons run at).
"""

from __future__ import annotations

import shutil
import sqlite3
import subprocess
from pathlib import Path

import anyio
import anyio.to_thread
import pytest
from support.daemon_proc import LENSMUX, DaemonProc, running_daemon
from support.lspclient import LspClient

from lensmux.graph.index.location import root_slug

pytestmark = [pytest.mark.slow]

SHAPES = '''"""Shapes."""

import math


class Circle:
    """A circle."""

    def __init__(self, radius: float) -> None:
        self.radius = radius

    @property
    def area(self) -> float:
        return math.pi * self.radius**2

    def scaled(self, factor: float) -> "Circle":
        return Circle(self.radius * factor)


def unit_circle() -> Circle:
    return Circle(1.0)


LIMIT = 10
'''
UTIL = "def clamp(value: int, low: int, high: int) -> int:\n    return max(low, min(value, high))\n"
STAR = "from .util import *\n\n\ndef clamp_twice(value: int) -> int:\n    return clamp(clamp(value, 0, 9), 1, 8)\n"


def _project(root: Path) -> Path:
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "shapes.py").write_text(SHAPES)
    (root / "pkg" / "util.py").write_text(UTIL)
    (root / "pkg" / "star.py").write_text(STAR)
    return root


def _index(daemon: DaemonProc, root: Path) -> None:
    done = subprocess.run(
        [LENSMUX, "index", str(root), "--runtime-dir", str(daemon.runtime_dir), "--wait"],
        env=daemon.env,
        capture_output=True,
        text=True,
        timeout=600,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, done.stderr


def _asked(daemon: DaemonProc, name: str) -> int:
    """How many documentSymbol requests the daemon sent about files named `name`."""
    return daemon.log_text().count(f"documentSymbol of {name} answered")


def _symbols(daemon: DaemonProc, root: Path, rel: str) -> list[tuple[object, ...]]:
    db = Path(daemon.env["XDG_STATE_HOME"]) / "lensmux" / "roots" / root_slug(root) / "index.sqlite"
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        rows = conn.execute(
            "SELECT s.name, s.qualified_name, s.kind, s.detail, s.container, s.depth, s.start_line, s.start_char,"
            " s.end_line, s.end_char, s.sel_start_line FROM symbols s JOIN files f ON f.id = s.file_id"
            " WHERE f.path = ? ORDER BY s.id",
            (rel,),
        ).fetchall()
    return [tuple(r) for r in rows]


def test_a_copy_in_another_root_is_not_asked_again(tmp_path: Path) -> None:
    first = _project(tmp_path / "first")
    second = tmp_path / "second"
    shutil.copytree(first, second)
    (second / "pkg" / "util.py").write_text(UTIL + "\n\ndef wrap(value: int) -> int:\n    return value % 7\n")
    with running_daemon(tmp_path / "d") as daemon:
        _index(daemon, first)
        assert _asked(daemon, "shapes.py") == 1 and _asked(daemon, "util.py") == 1
        _index(daemon, second)
        # The copy: answered from the cache; the edited file and the wildcard import: asked.
        assert _asked(daemon, "shapes.py") == 1
        assert _asked(daemon, "util.py") == 2
        assert _asked(daemon, "star.py") == 2
        cache = daemon.status()["index"]["symbol_cache"]
        shown = daemon.run_cli("status").stdout
        shapes = [_symbols(daemon, root, "pkg/shapes.py") for root in (first, second)]
        util = _symbols(daemon, second, "pkg/util.py")
    assert shapes[0] and shapes[0] == shapes[1]
    assert {"Circle", "area", "scaled", "unit_circle", "LIMIT"} <= {row[0] for row in shapes[0]}
    assert "wrap" in {row[0] for row in util}
    assert cache["hits"] >= 1 and cache["entries"] >= 3
    assert "symbol cache:" in shown and "symbol_cache_mb 64" in shown


def test_an_answer_about_an_editors_other_text_is_not_kept_for_the_files_text(tmp_path: Path) -> None:
    """An editor holds shapes.py with unsaved text while the root is indexed: pyright answers about that
    text, so the answer must not be kept under the text on disk, which a copy in another root has."""
    first = _project(tmp_path / "first")
    second = tmp_path / "second"
    shutil.copytree(first, second)
    unsaved = SHAPES + "\n\ndef only_in_the_editor() -> None:\n    pass\n"

    async def index_while_edited(daemon: DaemonProc) -> None:
        async with LspClient.over_unix(daemon.runtime_dir / "pyright.sock", name="editor") as editor:
            await editor.initialize(first)
            await editor.open(first / "pkg" / "shapes.py", "python", unsaved)
            await anyio.to_thread.run_sync(_index, daemon, first)
            await editor.shutdown_and_exit()

    with running_daemon(tmp_path / "d") as daemon:
        anyio.run(index_while_edited, daemon)
        _index(daemon, second)
        asked = _asked(daemon, "shapes.py")
        names = {row[0] for row in _symbols(daemon, second, "pkg/shapes.py")}
    assert asked == 2, "the copy was asked about: nothing was kept for the disk's text"
    assert "only_in_the_editor" not in names and "unit_circle" in names


def test_a_corrupt_cache_file_does_not_stop_indexing(tmp_path: Path) -> None:
    base = tmp_path / "d"
    state = base / "s" / "lensmux"
    state.mkdir(parents=True)
    (state / "symbol-cache.sqlite").write_bytes(b"this is not a database file " * 512)
    root = _project(tmp_path / "root")
    with running_daemon(base) as daemon:
        _index(daemon, root)
        log = daemon.log_text()
        rows = _symbols(daemon, root, "pkg/shapes.py")
        cache = daemon.status()["index"]["symbol_cache"]
    assert "symbol cache" in log and "is corrupt" in log and "starting it again" in log
    assert {"Circle", "unit_circle"} <= {row[0] for row in rows}
    assert cache["rebuilt"] == 1 and cache["entries"] >= 3
