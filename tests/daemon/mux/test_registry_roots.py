"""Which instance a client's root lands on: the asked root for pyright, the marker root for clangd.

pyright's answers depend on its root (configuration read there only, imports and file counts from
there), so a client asking for a sub-project must get a pyright of that sub-project; clangd's do
not (flags are found from each file upwards), so clients below one marker share one clangd
(measured by bench.mux.root_policy; docs/sharing.md, "Roots and workspace folders").
"""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from lensmux.daemon.config import load_config
from lensmux.daemon.mux.registry import InstanceRegistry, UnknownRoot, root_hint

pytestmark = [pytest.mark.anyio]


def _repo(tmp_path: Path) -> Path:
    """A repository with every marker at its top and a sub-project with none of its own."""
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "sub/deep").mkdir(parents=True)
    (repo / "pyproject.toml").write_text('[project]\nname = "repo"\n')
    (repo / "pyrightconfig.json").write_text("{}")
    (repo / "compile_commands.json").write_text("[]")
    (repo / "sub/main.py").write_text("")
    return repo


async def _roots(config_path: Path, asks: dict[str, tuple[str, Path]]) -> dict[str, Path]:
    async with anyio.create_task_group() as tg:
        registry = InstanceRegistry(tg, load_config(config_path))
        roots = {label: registry.key_for(server, hint).root for label, (server, hint) in asks.items()}
    return roots


async def test_pyright_runs_on_the_asked_root_and_clangd_on_the_marker_root(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    roots = await _roots(
        tmp_path / "none.toml",
        {
            "pyright sub": ("pyright", repo / "sub"),
            "pyright deep": ("pyright", repo / "sub/deep"),
            "pyright file": ("pyright", repo / "sub/main.py"),
            "pyright repo": ("pyright", repo),
            "clangd sub": ("clangd", repo / "sub/deep"),
        },
    )
    assert roots["pyright sub"] == repo / "sub"
    assert roots["pyright deep"] == repo / "sub/deep"
    # A file named as the root stands for its directory, as before.
    assert roots["pyright file"] == repo / "sub"
    assert roots["pyright repo"] == repo
    assert roots["clangd sub"] == repo


async def test_clangd_maps_to_the_nearest_marker_and_a_users_server_without_markers_does_not(
    tmp_path: Path,
) -> None:
    repo = _repo(tmp_path)
    (repo / "sub/compile_flags.txt").write_text("-Iinclude\n")
    config = tmp_path / "config.toml"
    config.write_text(
        '[servers.mine]\ncommand = "my-ls"\n[servers.mine.languages]\nmine = [".mine"]\n'
        '[servers.marked]\ncommand = "my-ls"\nroot_markers = [".git"]\n[servers.marked.languages]\nm = [".m2"]\n'
    )
    roots = await _roots(
        config,
        {
            "clangd": ("clangd", repo / "sub/deep"),
            "mine": ("mine", repo / "sub/deep"),
            "marked": ("marked", repo / "sub/deep"),
        },
    )
    assert roots["clangd"] == repo / "sub"
    assert roots["mine"] == repo / "sub/deep"
    assert roots["marked"] == repo


def test_a_root_named_only_where_pyright_does_not_look_gives_it_no_workspace(tmp_path: Path) -> None:
    """pyright takes its workspace from workspaceFolders, else rootPath; it ignores rootUri."""
    project = tmp_path / "proj"
    project.mkdir()
    folders = {"workspaceFolders": [{"uri": project.as_uri(), "name": "proj"}], "rootUri": (tmp_path / "x").as_uri()}
    pyright = ("workspaceFolders", "rootPath")
    assert root_hint(folders, pyright) == (project, True)
    assert root_hint({"rootPath": str(project)}, pyright) == (project, True)
    assert root_hint({"rootUri": project.as_uri()}, pyright) == (project, False)
    # For a server that reads rootUri (the LSP's order), the same client has a workspace.
    assert root_hint({"rootUri": project.as_uri()}) == (project, True)
    assert root_hint(folders) == (project, True), "workspaceFolders win over rootUri"
    with pytest.raises(UnknownRoot):
        root_hint({"rootUri": "https://example.com/x"}, pyright)
