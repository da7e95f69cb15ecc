"""The neovim-0.7 conformance profile is what the installed Neovim 0.7 really sends."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conformance.profiles import load_profile

RECORDER = Path(__file__).with_name("record_initialize.py")

CAPTURE_LUA = """
local id = vim.lsp.start_client({ name = "recorder", cmd = { %(python)s, %(recorder)s }, root_dir = %(root)s })
local client = vim.lsp.get_client_by_id(id)
vim.wait(20000, function() return client.initialized end, 20)
vim.lsp.stop_client(id)
vim.wait(5000, function() return client.is_stopped() end, 20)
vim.cmd("qall!")
"""


def _nvim_version() -> str | None:
    if shutil.which("nvim") is None:
        return None
    first = subprocess.run(["nvim", "--version"], capture_output=True, text=True, check=True).stdout.split("\n")[0]
    return first.removeprefix("NVIM v").strip()


@pytest.mark.skipif(not (_nvim_version() or "").startswith("0.7."), reason="needs Neovim 0.7 (Debian neovim)")
def test_neovim_07_profile_matches_what_neovim_sends(tmp_path: Path) -> None:
    out = tmp_path / "params.json"
    script = tmp_path / "capture.lua"
    lua = {
        "python": json.dumps(sys.executable),
        "recorder": json.dumps(str(RECORDER)),
        "root": json.dumps(str(tmp_path)),
    }
    script.write_text(CAPTURE_LUA % lua)
    subprocess.run(
        ["nvim", "--headless", "-n", "-i", "NONE", "-u", "NONE", "-c", f"luafile {script}"],
        env={"RECORD_OUT": str(out), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=60,
        check=True,
    )
    sent = json.loads(out.read_text())
    profile = load_profile("neovim-0.7")
    assert sent["clientInfo"]["name"] == profile.initialize["clientInfo"]["name"]
    # Without nvim-lspconfig's per-server additions, the capabilities are Neovim's own.
    assert sent["capabilities"] == profile.initialize["capabilities"]
