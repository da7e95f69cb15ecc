"""`lensmux search` as a new user runs it: one command in a fresh checkout, readable output."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from support.daemon_proc import LENSMUX, lensmux_env

pytestmark = pytest.mark.slow


def test_search_in_a_fresh_checkout_starts_indexes_and_reads_well(tmp_path: Path, py_project: Path) -> None:
    env = lensmux_env(tmp_path / "env")
    config = Path(env["XDG_CONFIG_HOME"]) / "lensmux" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text("[daemon.http]\nenabled = false\n")
    subprocess.run(["git", "init", "-q", str(py_project)], check=True)

    def lensmux(*argv: str, cwd: Path = py_project / "demo") -> subprocess.CompletedProcess[str]:
        return subprocess.run([LENSMUX, *argv], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)

    try:
        # No daemon runs, nothing is indexed, and the command runs from a subdirectory.
        found = lensmux("search", "multiply a value by repeated addition")
        assert found.returncode == 0, found.stderr
        assert "indexing" in found.stderr
        out = found.stdout
        assert not out.lstrip().startswith("{"), "the default output is for people, not JSON"
        assert "\033[" not in out, "no colour when stdout is not a terminal"
        assert "demo/util.py:5  scale" in out, out
        assert "def scale(value: int, factor: int) -> int:" in out
        assert "why: " in out and "seed:" not in out

        again = lensmux("search", "scale", "--json")
        assert again.returncode == 0, again.stderr
        assert "indexing" not in again.stderr
        assert json.loads(again.stdout)["ranked_symbols"]

        status = lensmux("status")
        assert status.returncode == 0, status.stderr
        assert "indexes: model" in status.stdout
        assert f"{py_project.resolve()}" in status.stdout and "chunks" in status.stdout
    finally:
        stop = lensmux("stop")
    assert stop.returncode == 0, stop.stderr
    assert lensmux("status").returncode != 0
