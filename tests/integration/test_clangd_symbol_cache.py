"""Issue 23: clangd's documentSymbol answers kept by text where their key says they are the same.

One daemon, real clangd, a small C project (a header whose macro names a function, a
compile_flags.txt with a -D the source uses for a name) indexed in a first root, then:
a copy (identical rows, clangd not asked), a copy with the header's macro changed (asked
again: the name changes), a copy with the -D changed (asked again) and two roots whose flags
name an include directory out of the root by a relative path, another directory from each
(no key: both asked, each answer its own); and an include directory out of the root by an
absolute path whose header is replaced (as a package manager does) between two copies
(asked again: the name changes). The
daemon logs every documentSymbol it sends (`documentSymbol of NAME answered`, debug level,
which test daemons run at).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from support.daemon_proc import running_daemon
from support.symbol_rows import asked, index, symbol_rows

pytestmark = [pytest.mark.slow]

HEADER = "#ifndef SHAPES_H\n#define SHAPES_H\n#define NAMED(x) shape_##x\nint NAMED(area)(int w, int h);\n#endif\n"
SOURCE = (
    '#include "shapes.h"\n\n'
    "struct box { int w; int h; };\n\n"
    "int NAMED(area)(int w, int h) { return w * h; }\n\n"
    "int FLAVOUR(struct box *b) { return shape_area(b->w, b->h); }\n"
)
MAIN = '#include "shapes.h"\n\nint main(void) { return shape_area(2, 3); }\n'
FLAGS = "-std=c11\n-Iinclude\n-DFLAVOUR=box_area\n"


def _project(root: Path, flags: str = FLAGS, header: str = HEADER) -> Path:
    (root / "include").mkdir(parents=True)
    (root / "src").mkdir()
    (root / "include" / "shapes.h").write_text(header)
    (root / "src" / "shapes.c").write_text(SOURCE)
    (root / "src" / "main.c").write_text(MAIN)
    (root / "compile_flags.txt").write_text(flags)
    return root


def test_clangd_answers_are_reused_only_where_their_key_holds(tmp_path: Path) -> None:
    first = _project(tmp_path / "first")
    copy = tmp_path / "copy"
    shutil.copytree(first, copy)
    header = _project(tmp_path / "header", header=HEADER.replace("shape_##x", "figure_##x"))
    define = _project(tmp_path / "define", flags=FLAGS.replace("box_area", "box_surface"))
    # Two roots whose flags name ../outside first: a different directory for each, with its own shapes.h.
    escaping = []
    for side in ("alpha", "beta"):
        (tmp_path / side / "outside").mkdir(parents=True)
        (tmp_path / side / "outside" / "shapes.h").write_text(HEADER.replace("shape_##x", f"{side}_##x"))
        escaping.append(_project(tmp_path / side / "root", flags="-I../outside\n" + FLAGS))
    with running_daemon(tmp_path / "d") as daemon:
        index(daemon, first)
        assert asked(daemon, "shapes.c") == 1 and asked(daemon, "main.c") == 1
        index(daemon, copy)
        # The copy: every C file and the header from the cache.
        assert (asked(daemon, "shapes.c"), asked(daemon, "main.c"), asked(daemon, "shapes.h")) == (1, 1, 1)
        rows = [symbol_rows(daemon, root, "src/shapes.c") for root in (first, copy)]
        index(daemon, header)
        assert asked(daemon, "shapes.c") == 2 and asked(daemon, "main.c") == 2, "a header differs"
        renamed = {row[0] for row in symbol_rows(daemon, header, "src/shapes.c")}
        index(daemon, define)
        assert asked(daemon, "shapes.c") == 3 and asked(daemon, "main.c") == 3, "a -D differs"
        redefined = {row[0] for row in symbol_rows(daemon, define, "src/shapes.c")}
        for root in escaping:
            index(daemon, root)
        assert asked(daemon, "shapes.c") == 5, "an include directory out of the root has no key"
        escaped = [{row[0] for row in symbol_rows(daemon, root, "src/shapes.c")} for root in escaping]
        cache = daemon.status()["index"]["symbol_cache"]
    assert rows[0] and rows[0] == rows[1]
    assert {"box", "shape_area", "box_area"} <= {row[0] for row in rows[0]}
    assert "figure_area" in renamed and "box_surface" in redefined
    assert "alpha_area" in escaped[0] and "beta_area" in escaped[1]
    assert cache["hits"] >= 3


def test_a_header_replaced_in_an_absolute_include_directory_asks_clangd_again(tmp_path: Path) -> None:
    outside = tmp_path / "usr" / "include"
    outside.mkdir(parents=True)
    (outside / "shapes.h").write_text(HEADER)
    first = tmp_path / "first"
    (first / "src").mkdir(parents=True)
    (first / "src" / "shapes.c").write_text(SOURCE)
    (first / "compile_flags.txt").write_text(f"-std=c11\n-I{outside}\n-DFLAVOUR=box_area\n")
    copy, upgraded = tmp_path / "copy", tmp_path / "upgraded"
    shutil.copytree(first, copy)
    shutil.copytree(first, upgraded)
    with running_daemon(tmp_path / "d") as daemon:
        index(daemon, first)
        index(daemon, copy)
        assert asked(daemon, "shapes.c") == 1, "the same header: the copy's answer from the cache"
        # An upgrade: the new header written beside the old one and renamed over it.
        (outside / "shapes.h.dpkg-new").write_text(HEADER.replace("shape_##x", "figure_##x"))
        os.replace(outside / "shapes.h.dpkg-new", outside / "shapes.h")
        index(daemon, upgraded)
        assert asked(daemon, "shapes.c") == 2, "the header out of the root changed"
        names = {row[0] for row in symbol_rows(daemon, upgraded, "src/shapes.c")}
    assert "figure_area" in names and "shape_area" not in names
