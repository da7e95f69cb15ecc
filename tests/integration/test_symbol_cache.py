"""Issue 23: pyright's documentSymbol answers kept by text for every root (graph/index/builder/caches/symbol_cache.py).

A second root holding a copy of an indexed file gets the same symbol rows without pyright
being asked about it; a file whose text changed, and one with a wildcard import (its
symbols depend on the module it imports), are asked again; a corrupt cache file costs
its hits, not the run. Real pyright; the daemon logs every documentSymbol it sends
(`documentSymbol of NAME answered`, debug level, which test daemons run at).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import anyio
import anyio.to_thread
import pytest
from support.daemon_proc import DaemonProc, running_daemon
from support.lspclient import LspClient
from support.symbol_rows import asked, index, symbol_rows

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


def test_a_copy_in_another_root_is_not_asked_again(tmp_path: Path) -> None:
    first = _project(tmp_path / "first")
    second = tmp_path / "second"
    shutil.copytree(first, second)
    (second / "pkg" / "util.py").write_text(UTIL + "\n\ndef wrap(value: int) -> int:\n    return value % 7\n")
    with running_daemon(tmp_path / "d") as daemon:
        index(daemon, first)
        assert asked(daemon, "shapes.py") == 1 and asked(daemon, "util.py") == 1
        index(daemon, second)
        # The copy: answered from the cache; the edited file and the wildcard import: asked.
        assert asked(daemon, "shapes.py") == 1
        assert asked(daemon, "util.py") == 2
        assert asked(daemon, "star.py") == 2
        cache = daemon.status()["index"]["symbol_cache"]
        shown = daemon.run_cli("status").stdout
        shapes = [symbol_rows(daemon, root, "pkg/shapes.py") for root in (first, second)]
        util = symbol_rows(daemon, second, "pkg/util.py")
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
            await anyio.to_thread.run_sync(index, daemon, first)
            await editor.shutdown_and_exit()

    with running_daemon(tmp_path / "d") as daemon:
        anyio.run(index_while_edited, daemon)
        index(daemon, second)
        times = asked(daemon, "shapes.py")
        names = {row[0] for row in symbol_rows(daemon, second, "pkg/shapes.py")}
    assert times == 2, "the copy was asked about: nothing was kept for the disk's text"
    assert "only_in_the_editor" not in names and "unit_circle" in names


def test_a_corrupt_cache_file_does_not_stop_indexing(tmp_path: Path) -> None:
    base = tmp_path / "d"
    state = base / "s" / "lensmux"
    state.mkdir(parents=True)
    (state / "symbol-cache.sqlite").write_bytes(b"this is not a database file " * 512)
    root = _project(tmp_path / "root")
    with running_daemon(base) as daemon:
        index(daemon, root)
        log = daemon.log_text()
        rows = symbol_rows(daemon, root, "pkg/shapes.py")
        cache = daemon.status()["index"]["symbol_cache"]
    assert "symbol cache" in log and "is corrupt" in log and "starting it again" in log
    assert {"Circle", "unit_circle"} <= {row[0] for row in rows}
    assert cache["rebuilt"] == 1 and cache["entries"] >= 3
