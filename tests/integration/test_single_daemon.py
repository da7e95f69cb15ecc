"""Exactly one daemon: concurrent autostarts end with one, and `lensmux stop` leaves none."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from support.daemon_proc import LENSMUX, lensmux_env, wait_until

pytestmark = pytest.mark.slow


def daemons_in(runtime_dir: Path) -> list[int]:
    """Pids of live `serve --foreground` processes for this runtime directory."""
    out = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z" and b"--foreground" in argv and str(runtime_dir).encode() in argv:
            out.append(int(entry.name))
    return out


def _setup(tmp_path: Path) -> tuple[dict[str, str], Path, Path]:
    env = lensmux_env(tmp_path)
    runtime_dir = Path(env["XDG_RUNTIME_DIR"]) / "lensmux"
    config = tmp_path / "config.toml"
    config.write_text("[daemon.http]\nenabled = false\n")
    return env, runtime_dir, config


def test_concurrent_autostarts_end_with_one_daemon_and_stop_leaves_none(tmp_path: Path) -> None:
    env, runtime_dir, config = _setup(tmp_path)
    common = ["--runtime-dir", str(runtime_dir)]
    starters = [
        subprocess.Popen(
            [LENSMUX, "serve", *common, "--config", str(config)], env=env, stdout=subprocess.PIPE, text=True
        )
        for _ in range(4)
    ]
    # Editors autostarting at the same moment: the bridge starts a daemon too.
    editors = [
        subprocess.Popen(
            [LENSMUX, "client", "pyright", *common, "--config", str(config)],
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        for _ in range(3)
    ]
    try:
        outputs = [p.communicate(timeout=90)[0] for p in starters]
        assert [p.returncode for p in starters] == [0] * 4, outputs
        pids = {line.split("pid ")[1].split(")")[0] for line in outputs}
        assert len(pids) == 1, outputs
        # A daemon an editor's bridge started may still be finding the lock taken: it exits on its own.
        winner = [int(pids.pop())]
        wait_until(lambda: daemons_in(runtime_dir) == winner, timeout=30, what="the daemons that lost to exit")
        # A further `serve` while one runs leaves nothing behind either.
        again = subprocess.run([LENSMUX, "serve", *common], env=env, capture_output=True, text=True, timeout=60)
        assert again.returncode == 0, again.stderr
        assert len(daemons_in(runtime_dir)) == 1
    finally:
        for editor in editors:
            assert editor.stdin is not None
            editor.stdin.close()
    stop = subprocess.run([LENSMUX, "stop", *common], env=env, capture_output=True, text=True, timeout=90)
    assert stop.returncode == 0, stop.stderr
    for editor in editors:
        editor.wait(30)
    assert daemons_in(runtime_dir) == []
    # Nothing takes the sockets over after the stop.
    status = subprocess.run([LENSMUX, "status", *common], env=env, capture_output=True, text=True, timeout=30)
    assert status.returncode != 0 and "no lensmux daemon" in status.stderr


def test_second_foreground_daemon_exits_cleanly(tmp_path: Path) -> None:
    env, runtime_dir, config = _setup(tmp_path)
    first = subprocess.Popen(
        [LENSMUX, "serve", "--foreground", "--runtime-dir", str(runtime_dir), "--config", str(config)], env=env
    )
    try:
        wait_until((runtime_dir / "lensmux.sock").exists, what="first daemon")
        second = subprocess.run(
            [sys.executable, "-m", "lensmux.daemon.cli.main", "serve", "--foreground", "--runtime-dir",
             str(runtime_dir), "--config", str(config)],
            env=env, capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert second.returncode == 0
        assert "holds" in second.stderr
        assert daemons_in(runtime_dir) == [first.pid]
    finally:
        first.terminate()
        first.wait(30)
