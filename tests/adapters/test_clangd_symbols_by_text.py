"""clangd's symbol cache key (adapters/clangd/clangd_symbols.py): the same for a copy, moved by what the AST reads.

No clangd process: the key is computed from the disk and `clangd --version` (the installed binary).
"""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import pytest

from lensmux.adapters.clangd.clangd import ClangdAdapter
from lensmux.adapters.clangd.clangd_outside import search_list
from lensmux.adapters.spec import ServerConfig

SOURCE = '#include "util.h"\nint twice(int x) { return 2 * x; }\n'


def _project(root: Path) -> Path:
    (root / "src").mkdir(parents=True)
    (root / "src" / "util.h").write_text("#define LIMIT 3\n")
    (root / "src" / "main.c").write_text(SOURCE)
    (root / "README.txt").write_text("notes\n")
    return root


def _key(root: Path, rel: str = "src/main.c") -> str | None:
    adapter = ClangdAdapter(ServerConfig(name="clangd", command="clangd"))
    adapter.refresh_symbols_by_text(root, time.monotonic())
    return adapter.symbols_by_text(root / rel, SOURCE)


@pytest.fixture
def pair(tmp_path: Path) -> tuple[Path, Path]:
    first = _project(tmp_path / "one" / "first")
    second = tmp_path / "two" / "second"
    shutil.copytree(first, second)
    return first, second


def test_a_copy_has_the_same_key_and_a_changed_header_another(pair: tuple[Path, Path]) -> None:
    first, second = pair
    assert _key(first) is not None and _key(first) == _key(second)
    (second / "README.txt").write_text("other notes\n")
    assert _key(first) == _key(second), "a file nothing can include"
    (second / "src" / "util.h").write_text("#define LIMIT 4\n")
    assert _key(first) != _key(second)


def test_included_suffixes_and_computed_includes_join_the_epoch(pair: tuple[Path, Path]) -> None:
    first, second = pair
    for root in pair:
        (root / "src" / "table.txt").write_text("1, 2, 3\n")
        (root / "src" / "main.c").write_text(SOURCE + 'int t[] = {\n#include "table.txt"\n};\n')
    (second / "src" / "table.txt").write_text("1, 2\n")
    assert _key(first) != _key(second), "a .txt file is included"
    for root in pair:
        (root / "src" / "table.txt").write_text("1, 2, 3\n")
        (root / "src" / "main.c").write_text("#define H <config>\n#include H\n")
        (root / "src" / "config").write_text("#define A 1\n")
    assert _key(first) == _key(second)
    (second / "README.txt").write_text("other notes\n")
    assert _key(first) != _key(second), "after a computed include, every file counts"


def test_the_epoch_follows_an_edit_after_the_last_refresh(tmp_path: Path) -> None:
    root = _project(tmp_path / "root")
    adapter = ClangdAdapter(ServerConfig(name="clangd", command="clangd"))
    checked = time.monotonic()
    adapter.refresh_symbols_by_text(root, checked)
    before = adapter.symbols_by_text(root / "src" / "main.c", SOURCE)
    (root / "src" / "util.h").write_text("#define LIMIT 5\n")
    (root / "src" / "new.h").write_text("")
    adapter.refresh_symbols_by_text(root, checked - 1.0)
    assert adapter.symbols_by_text(root / "src" / "main.c", SOURCE) == before, "a check begun since then serves"
    adapter.refresh_symbols_by_text(root, time.monotonic())
    assert adapter.symbols_by_text(root / "src" / "main.c", SOURCE) not in (None, before)


def test_flags_count_with_the_root_replaced(pair: tuple[Path, Path]) -> None:
    first, second = pair
    for root in pair:
        entry = {"directory": str(root), "file": "src/main.c", "arguments": ["cc", f"-I{root}/src", "-DA=1", "-c"]}
        (root / "compile_commands.json").write_text(json.dumps([entry]))
    assert _key(first) is not None and _key(first) == _key(second)
    assert _key(first, "src/util.h") == _key(second, "src/util.h"), "interpolated from the same database"
    text = (second / "compile_commands.json").read_text()
    (second / "compile_commands.json").write_text(text.replace("-DA=1", "-DA=2"))
    assert _key(first) != _key(second)


@pytest.mark.parametrize(
    "flags",
    ["-I../outside", "-I\n../outside", "-isystem../outside", "-include\n../outside/x.h", "@flags.rsp", "--sysroot=.."],
)
def test_a_path_out_of_the_root_by_a_relative_path_has_no_key(tmp_path: Path, flags: str) -> None:
    root = _project(tmp_path / "root")
    (root / "compile_flags.txt").write_text(f"-DA=1\n{flags}\n")
    assert _key(root) is None


def test_an_absolute_path_out_of_the_root_keeps_the_key(tmp_path: Path) -> None:
    root = _project(tmp_path / "root")
    (root / "compile_flags.txt").write_text(f"-I{tmp_path}\n")
    assert _key(root) is not None


def test_escaping_links_and_configuration_above_the_root_have_no_key(tmp_path: Path) -> None:
    root = _project(tmp_path / "a" / "root")
    os.symlink("../../elsewhere", root / "src" / "linked")
    assert _key(root) is None
    other = _project(tmp_path / "b" / "root")
    (tmp_path / "b" / ".clangd").write_text("CompileFlags:\n  Add: [-DB=1]\n")
    assert _key(other) is None
    third = _project(tmp_path / "c" / "root")
    (third / ".clangd").write_text("If:\n  PathMatch: src/.*\nCompileFlags:\n  Add: [-DB=1]\n")
    assert _key(third) is None


def test_angled_includes_count_only_where_an_include_directory_can_be_in_the_root(pair: tuple[Path, Path]) -> None:
    first, second = pair
    for root in pair:
        (root / "src" / "main.c").write_text("#include <cstdlib>\n" + SOURCE)
        (root / "PKG-INFO").write_text("Version: 1\n")
    (second / "PKG-INFO").write_text("Version: 2\n")
    assert _key(first) == _key(second), "fallback flags search only the system's directories for <...>"
    for root in pair:
        (root / "compile_flags.txt").write_text("-Isrc\n")
    assert _key(first) != _key(second), "an include directory of the root may hold cstdlib"


def test_an_include_that_may_leave_the_root_has_no_key(tmp_path: Path) -> None:
    root = _project(tmp_path / "root")
    (root / "src" / "main.c").write_text('#include "../../shared/defs.h"\n' + SOURCE)
    assert _key(root) is None
    (root / "src" / "main.c").write_text('#include "../src/util.h"\n' + SOURCE)
    assert _key(root) is not None, "found beside its file, in the root"


def _replace(path: Path, text: str) -> None:
    """Write `path` as a package manager does: a new file renamed over the old one."""
    fresh = path.with_name(path.name + ".dpkg-new")
    fresh.write_text(text)
    os.replace(fresh, path)


def test_absolute_paths_out_of_the_root_count_by_what_they_hold(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    (outside / "sub").mkdir(parents=True)
    (outside / "sub" / "defs.h").write_text("#define LIMIT 3\n")
    (tmp_path / "forced.h").write_text("#define FORCED 1\n")
    root = _project(tmp_path / "root")
    flags = [f"-I{outside}", f"-isystem\n{tmp_path / 'later'}", f"-include\n{tmp_path / 'forced.h'}"]
    (root / "compile_flags.txt").write_text("\n".join(flags) + "\n")
    keys = [_key(root)]
    assert keys[0] is not None and _key(root) == keys[0], "unchanged directories keep the key"
    (root.parent / "unrelated.h").write_text("")
    assert _key(root) == keys[0], "a directory no flag names"
    _replace(outside / "sub" / "defs.h", "#define LIMIT 4\n")
    keys.append(_key(root))
    (tmp_path / "later").mkdir()
    keys.append(_key(root))
    (tmp_path / "forced.h").write_text("#define FORCED 2\n")  # in place: a named file is stamped by its own stat
    keys.append(_key(root))
    assert None not in keys and len(set(keys)) == 4, "a replaced header, a created directory, a rewritten file"


def test_clangd_system_directories_count_by_what_they_hold(tmp_path: Path) -> None:
    system = tmp_path / "system"
    system.mkdir()
    (system / "config.h").write_text("#define LIMIT 3\n")
    root = _project(tmp_path / "root")
    adapter = ClangdAdapter(ServerConfig(name="clangd", command="clangd", env={"CPATH": str(system)}))
    keys = []
    for _ in range(2):
        adapter.refresh_symbols_by_text(root, time.monotonic())
        keys.append(adapter.symbols_by_text(root / "src" / "main.c", SOURCE))
        _replace(system / "config.h", "#define LIMIT 4\n")
    assert keys[0] is not None and keys[1] not in (None, keys[0]), "found in clangd's search list, not the flags"
    binary = adapter.command(root, os.getpid())[0]
    if Path("/usr/include").is_dir():
        assert "/usr/include" in search_list(binary, adapter.environment(), [])


@pytest.mark.parametrize(
    "flags", ["--target=aarch64-linux-gnu", "-target\naarch64-linux-gnu", "-stdlib=libc++", "-m32"]
)
def test_flags_choosing_other_system_directories_have_no_key(tmp_path: Path, flags: str) -> None:
    root = _project(tmp_path / "root")
    (root / "compile_flags.txt").write_text(f"-DA=1\n{flags}\n")
    assert _key(root) is None


def test_absolute_paths_in_clangd_configuration_count_by_what_they_hold(tmp_path: Path) -> None:
    outside = tmp_path / "opt" / "include"
    outside.mkdir(parents=True)
    (outside / "defs.h").write_text("#define LIMIT 3\n")
    root = _project(tmp_path / "root")
    (root / ".clangd").write_text(f"CompileFlags:\n  Add: [-DB=1, -I{outside}]\n")
    before = _key(root)
    assert before is not None and _key(root) == before
    _replace(outside / "defs.h", "#define LIMIT 4\n")
    assert _key(root) not in (None, before)
