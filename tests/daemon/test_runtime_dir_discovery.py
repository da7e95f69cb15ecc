"""Tools started with a minimal environment find the same runtime directory as the daemon."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from lensmux.daemon import paths
from lensmux.daemon.cli.connect.autostart import discover_runtime_dir


def test_without_xdg_runtime_dir_the_session_directory_comes_before_tmp(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    candidates = paths.runtime_dir_candidates()
    session = Path(f"/run/user/{os.getuid()}")
    if session.is_dir() and os.access(session, os.W_OK):
        assert candidates[0] == session / "lensmux"
    assert candidates[-1] == Path(f"/tmp/lensmux-{os.getuid()}")


def test_an_explicit_runtime_dir_wins_and_a_listening_candidate_is_found(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import socket

    assert discover_runtime_dir(str(tmp_path)) == tmp_path
    live = tmp_path / "live"
    live.mkdir()
    monkeypatch.setattr(paths, "runtime_dir_candidates", lambda: [tmp_path / "default", live])
    assert discover_runtime_dir(None) == tmp_path / "default"
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as listener:
        listener.bind(str(live / "lensmux.sock"))
        listener.listen()
        assert discover_runtime_dir(None) == live
