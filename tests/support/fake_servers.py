"""Command lines for the scripted fake language servers in tests/fakes/."""

from __future__ import annotations

import sys
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
