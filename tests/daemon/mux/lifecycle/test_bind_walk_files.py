"""What the bind walk asks about: the workspace's files, once per server process (bind_walk.py)."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from lensmux.adapters.registry import adapter_for
from lensmux.daemon.config import load_config
from lensmux.daemon.mux.lifecycle.bind_walk import BindWalk, binds_files, workspace_files

pytestmark = pytest.mark.anyio


def test_an_adapter_that_cannot_list_sources_gets_the_tree_without_hidden_dependency_cache_and_virtualenv_folders(
    tmp_path: Path,
) -> None:
    for rel in (
        "pkg/a.py",
        "pkg/sub/b.pyi",
        ".git/c.py",
        "node_modules/d.py",
        "pkg/__pycache__/e.py",
        "env/f.py",
        "conda/g.py",
        "__editable__.pkg-1.0/h.py",
    ):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("x = 1\n")
    (tmp_path / "env" / "pyvenv.cfg").write_text("home = /usr\n")
    (tmp_path / "conda" / "conda-meta").mkdir()
    clangd = adapter_for(load_config(tmp_path / "none.toml").servers["clangd"])
    assert clangd.source_files(tmp_path) is None
    found = [p.relative_to(tmp_path).as_posix() for p in workspace_files(clangd, [tmp_path])]
    assert found == ["pkg/a.py", "pkg/sub/b.pyi"]


def test_pyright_lists_its_own_sources_for_each_root(tmp_path: Path) -> None:
    for rel in ("a/pyrightconfig.json", "a/keep.py", "a/build/drop.py", "b/other.py", "b/notes.txt"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text('{"exclude": ["build"]}' if rel.endswith(".json") else "x = 1\n")
    pyright = adapter_for(load_config(tmp_path / "none.toml").servers["pyright"])
    found = [p.relative_to(tmp_path).as_posix() for p in workspace_files(pyright, [tmp_path / "a", tmp_path / "b"])]
    assert found == ["a/keep.py", "b/other.py"]


def test_pyright_binds_python_files_and_clangd_none(tmp_path: Path) -> None:
    servers = load_config(tmp_path / "none.toml").servers
    pyright, clangd = adapter_for(servers["pyright"]), adapter_for(servers["clangd"])
    assert binds_files(pyright) and not binds_files(clangd)
    assert pyright.bind_file_request(tmp_path / "a.py") == (
        "textDocument/documentSymbol",
        {"textDocument": {"uri": (tmp_path / "a.py").as_uri()}},
    )
    assert pyright.bind_file_request(tmp_path / "README.md") is None


async def test_a_new_process_binds_again_and_a_folder_added_keeps_what_is_bound() -> None:
    walk = BindWalk(enabled=True)
    walk.restart()
    with anyio.fail_after(1):
        await walk.wait_due()
    walk.answered("file:///w/a.py")
    walk.due()
    assert walk.is_due and walk.bound == {"file:///w/a.py"}
    walk.restart()
    assert walk.bound == set()


def test_off_by_config_is_never_due() -> None:
    walk = BindWalk(enabled=False)
    walk.restart()
    assert not walk.is_due and walk.status() == "off"
