"""Command lines, daemon configuration and a workspace for the scripted fake language servers in tests/fakes/."""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from pathlib import Path

FAKES_DIR = Path(__file__).resolve().parent.parent / "fakes"
FAKE_LSP_SERVER = FAKES_DIR / "fake_lsp_server.py"
ECHO_LSP_SERVER = FAKES_DIR / "echo_lsp_server.py"


def fake_server_argv(*flags: str) -> list[str]:
    """argv running the pygls fake server with behaviour flags, e.g. ("--crash-after", "2")."""
    return [sys.executable, str(FAKE_LSP_SERVER), *flags]


def echo_server_argv() -> list[str]:
    """argv running the minimal raw-framing echo server."""
    return [sys.executable, str(ECHO_LSP_SERVER)]


FAST_RESTARTS = (
    "[daemon.breaker]\nrestart_backoff_start = 0.05\nrestart_backoff_max = 0.2\n"
    "failure_threshold = 3\nrestart_limit = 50\ncooldown = 1.0\n"
)


def fake_server_config(*flags: str, extra: str = "") -> str:
    """Daemon config adding the fake server as `fake` (with fast restarts), plus `extra` TOML."""
    args = json.dumps([str(FAKE_LSP_SERVER), *flags])
    return (
        FAST_RESTARTS
        + f"[servers.fake]\ncommand = {json.dumps(sys.executable)}\nargs = {args}\n"
        + 'root_markers = [".git"]\n[servers.fake.languages]\nplaintext = [".txt"]\n'
        + extra
    )


def fake_workspace(path: Path, files: Mapping[str, str] | None = None) -> Path:
    """A workspace root the fake server is started for: a git marker and its text files (default one, a.txt)."""
    (path / ".git").mkdir(parents=True)
    for rel, text in (files or {"a.txt": "alpha\nbeta\n"}).items():
        (path / rel).write_text(text)
    return path
