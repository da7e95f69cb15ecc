"""Daemon lifecycle seen from outside: autostart, kill -9, bad roots, clean stop."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

import pytest
from support.daemon_proc import (
    LENSMUX,
    DaemonProc,
    descendants,
    lensmux_env,
    process_alive,
    running_daemon,
    wait_until,
)
from support.lspclient import LspClient, LspResponseError

pytestmark = [pytest.mark.anyio]


@pytest.mark.slow
async def test_kill_9_of_the_daemon_leaves_no_server_running(tmp_path: Path, c_project: Path, py_project: Path) -> None:
    with running_daemon(tmp_path / "d") as daemon:
        async with (
            LspClient.over_process(daemon.client_argv("clangd")) as c,
            LspClient.over_process(daemon.client_argv("pyright")) as p,
        ):
            await c.initialize(c_project)
            await p.initialize(py_project)
            assert len(daemon.instances()) == 2
            # Servers and whatever they started (pyright's node, for one).
            pids = descendants(daemon.pid)
            assert len(pids) >= 2
            os.kill(daemon.pid, signal.SIGKILL)
            daemon.proc.wait()
            wait_until(lambda: not any(process_alive(pid) for pid in pids), timeout=20, what="servers to die")


@pytest.mark.slow
async def test_sigterm_stops_servers_and_exits_zero(tmp_path: Path, py_project: Path) -> None:
    with running_daemon(tmp_path / "d") as daemon:
        async with LspClient.over_process(daemon.client_argv("pyright")) as p:
            await p.initialize(py_project)
            pid = daemon.instances()[0]["pid"]
            assert daemon.stop() == 0
            assert not process_alive(pid)
            assert not (daemon.runtime_dir / "pyright.sock").exists()


async def test_client_autostarts_a_daemon(tmp_path: Path, py_project: Path) -> None:
    env = lensmux_env(tmp_path / "auto")
    runtime_dir = Path(env["XDG_RUNTIME_DIR"]) / "lensmux"
    argv = [LENSMUX, "client", "pyright", "--runtime-dir", str(runtime_dir)]
    async with LspClient.over_process(argv, env=env) as client:
        result = await client.initialize(py_project)
        assert "capabilities" in result
    daemon_pid = DaemonProc(subprocess.Popen(["true"]), runtime_dir, env, tmp_path / "none").call("lensmux/ping")["pid"]
    os.kill(daemon_pid, signal.SIGTERM)
    wait_until(lambda: not process_alive(daemon_pid), what="autostarted daemon to stop")


def test_client_without_daemon_and_no_autostart_fails_with_one_line(tmp_path: Path) -> None:
    env = lensmux_env(tmp_path / "none")
    proc = subprocess.run(
        [LENSMUX, "client", "clangd", "--runtime-dir", str(tmp_path / "nothing"), "--no-autostart"],
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode != 0
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "no lensmux daemon" in lines[0]


async def test_initialize_without_a_root_gets_a_clear_error(daemon: DaemonProc) -> None:
    async with LspClient.over_process(daemon.client_argv("pyright")) as client:
        with pytest.raises(LspResponseError) as err:
            await client.request("initialize", {"processId": None, "rootUri": None, "capabilities": {}})
        assert "root" in err.value.message
        # The daemon still serves: the status call works and nothing started.
        assert daemon.instances() == []


async def test_missing_server_binary_is_reported_and_others_keep_working(tmp_path: Path, py_project: Path) -> None:
    config = '[servers.ghost]\ncommand = "no-such-language-server"\nroot_markers = [".git"]\n'
    with running_daemon(tmp_path / "d", config) as daemon:
        async with LspClient.over_process(daemon.client_argv("ghost")) as ghost:
            with pytest.raises(LspResponseError) as err:
                await ghost.initialize(py_project)
            assert "no-such-language-server" in err.value.message
        async with LspClient.over_process(daemon.client_argv("pyright")) as p:
            assert "capabilities" in await p.initialize(py_project)
