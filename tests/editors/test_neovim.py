"""Two real headless Neovim instances share one clangd through `lensmux client`."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from support.daemon_proc import DaemonProc, descendants, wait_until

PROBE = Path(__file__).with_name("nvim_lsp_probe.lua")

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("nvim") is None, reason="nvim is not installed (Debian package neovim)"),
]


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_text()
    except OSError:
        return ""


def test_two_neovims_are_answered_by_one_clangd(daemon: DaemonProc, c_project: Path, tmp_path: Path) -> None:
    release = tmp_path / "release"
    procs, outs = [], []
    for name in ("nvim-a", "nvim-b"):
        out = tmp_path / f"{name}.json"
        env = {**daemon.env, "PROBE_OUT": str(out), "PROBE_RELEASE": str(release), "PROBE_ROOT": str(c_project)}
        procs.append(
            subprocess.Popen(
                ["nvim", "--headless", "-n", "-i", "NONE", "-u", "NONE", "-c", f"luafile {PROBE}", "src/main.c"],
                cwd=c_project,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
            )
        )
        outs.append(out)
    try:
        wait_until(lambda: all(o.exists() for o in outs), timeout=120, what="both Neovims to report")
        reports = [json.loads(o.read_text()) for o in outs]
        for report in reports:
            assert report["status"] == "ready", report
            assert {"compute", "main"} <= set(report["symbols"]), report
            assert any(t.endswith(("util.h", "util.c")) for t in report["definitions"]), report
        instances = daemon.instances("clangd")
        assert len(instances) == 1 and len(instances[0]["clients"]) == 2, instances
        # Exactly one clangd below the daemon in the process table.
        clangds = [p for p in descendants(daemon.pid) if _cmdline(p).split("\0")[0].endswith("clangd")]
        assert clangds == [instances[0]["pid"]]
        release.touch()
        for proc in procs:
            assert proc.wait(60) == 0
    finally:
        release.touch()
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
