"""The real daemon as a systemd service: socket activation, notifications, reload, doctor."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from support.daemon_proc import LENSMUX, DaemonProc, lensmux_env, running_daemon, wait_until
from support.fake_servers import fake_server_config
from support.lspclient import LspClient

pytestmark = [pytest.mark.anyio]

SOCKET_ACTIVATE = shutil.which("systemd-socket-activate")


def _control_ping(path: Path) -> bytes:
    """Connect, send a ping, and return the raw answer (blocking, plain sockets)."""
    body = b'{"jsonrpc":"2.0","id":1,"method":"lensmux/ping"}'
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(60)
        sock.connect(str(path))
        sock.sendall(b"Content-Length: %d\r\n\r\n%b" % (len(body), body))
        data = b""
        while b'"result"' not in data and b'"error"' not in data:
            chunk = sock.recv(4096)
            if not chunk:
                break
            data += chunk
    return data


@pytest.mark.skipif(SOCKET_ACTIVATE is None, reason="systemd-socket-activate is not installed (Debian package systemd)")
def test_socket_activation_serves_a_client_that_connected_before_the_daemon(tmp_path: Path, py_project: Path) -> None:
    env = lensmux_env(tmp_path)
    runtime_dir = tmp_path / "rt"
    runtime_dir.mkdir(mode=0o700)
    names = ["lensmux", "clangd", "pyright", "omnisharp"]
    argv = [str(SOCKET_ACTIVATE)]
    for name in names:
        argv += ["-l", str(runtime_dir / f"{name}.sock")]
    argv += [LENSMUX, "serve", "--foreground", "--runtime-dir", str(runtime_dir), "--log-level", "debug"]
    log = tmp_path / "activate.log"
    with open(log, "wb") as out:
        launcher = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=out)
    try:
        # The socket file exists from its bind(); the launcher says "Listening on <path>" after
        # listen(), and a connect in between is refused (seen under load).
        listening = [f"Listening on {runtime_dir / f'{name}.sock'} " for name in names]
        wait_until(lambda: all(line in log.read_text() for line in listening), what="launcher listening")
        # The launcher starts lensmux only on this first connection; the ping waits in the socket.
        answer = _control_ping(runtime_dir / "lensmux.sock")
        assert b'"pid"' in answer, (answer, log.read_text())
        text = log.read_text()
        assert "serving" in text
        # The adopted pyright socket is a working server socket too.
        daemon = DaemonProc(launcher, runtime_dir, env, log)

        async def use_pyright() -> None:
            async with LspClient.over_unix(runtime_dir / "pyright.sock") as client:
                result = await client.initialize(py_project)
                assert "capabilities" in result

        anyio.run(use_pyright)
        assert daemon.instances("pyright")
    finally:
        launcher.send_signal(signal.SIGTERM)
        assert launcher.wait(30) == 0


class NotifyListener:
    """A NOTIFY_SOCKET datagram socket collecting what the daemon says."""

    def __init__(self, path: Path) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(str(path))
        self.sock.settimeout(0.2)
        self.messages: list[str] = []

    def drain(self) -> list[str]:
        """Everything received so far, one assignment per entry."""
        while True:
            try:
                data = self.sock.recv(4096)
            except TimeoutError:
                return self.messages
            self.messages.extend(data.decode().splitlines())

    def wait_for(self, assignment: str, count: int = 1, timeout: float = 30) -> list[str]:
        """Wait until `assignment` was received `count` times."""
        seen: list[str] = wait_until(
            lambda: self.drain().count(assignment) >= count and self.messages, timeout=timeout, what=assignment
        )
        return seen


@pytest.fixture
def notify(tmp_path: Path) -> Iterator[NotifyListener]:
    """A listener bound in the test's directory."""
    listener = NotifyListener(tmp_path / "notify.sock")
    yield listener
    listener.sock.close()


def test_ready_watchdog_reload_and_stopping_are_notified(tmp_path: Path, notify: NotifyListener) -> None:
    extra = {"NOTIFY_SOCKET": str(tmp_path / "notify.sock"), "WATCHDOG_USEC": "600000"}
    with running_daemon(tmp_path / "d", extra_env=extra) as daemon:
        notify.wait_for("READY=1")
        notify.wait_for("WATCHDOG=1", count=3)
        daemon.proc.send_signal(signal.SIGHUP)
        notify.wait_for("READY=1", count=2)
        messages = notify.drain()
        reloading = messages.index("RELOADING=1")
        assert reloading < len(messages) - 1 - messages[::-1].index("READY=1")
        assert any(m.startswith("MONOTONIC_USEC=") for m in messages)
        assert any(m.startswith("STATUS=") and "instances" in m for m in messages)
        assert daemon.stop() == 0
    assert "STOPPING=1" in notify.drain()


async def test_reload_adds_a_server_and_keeps_connected_clients(tmp_path: Path, py_project: Path) -> None:
    with running_daemon(tmp_path / "d") as daemon:
        async with LspClient.over_process(daemon.client_argv("pyright")) as client:
            await client.initialize(py_project)
            (tmp_path / "d" / "config.toml").write_text(fake_server_config())
            daemon.proc.send_signal(signal.SIGHUP)
            wait_until((daemon.runtime_dir / "fake.sock").exists, what="new server socket")
            assert daemon.status()["reloads"] == 1
            # The pyright client is still connected and answered.
            uri = await client.open(py_project / "demo/util.py", "python")
            assert await client.request("textDocument/documentSymbol", {"textDocument": {"uri": uri}})
            async with LspClient.over_process(daemon.client_argv("fake")) as fake:
                (py_project / ".git").mkdir(exist_ok=True)
                await fake.initialize(py_project)
                assert await fake.request("fake/echo", {"x": 1}) == {"x": 1}


async def test_invalid_config_on_reload_is_rejected_precisely_and_the_old_one_kept(
    tmp_path: Path, py_project: Path
) -> None:
    with running_daemon(tmp_path / "d") as daemon:
        config = tmp_path / "d" / "config.toml"
        config.write_text('[daemon]\nidle_timeout = "soon"\n')
        daemon.proc.send_signal(signal.SIGHUP)
        wait_until(lambda: "configuration rejected" in daemon.log_text(), what="rejection log line")
        line = next(ln for ln in daemon.log_text().splitlines() if "configuration rejected" in ln)
        assert str(config) in line and "$.daemon.idle_timeout" in line and "Expected `float`" in line
        status = daemon.status()
        assert status["reloads"] == 0 and "$.daemon.idle_timeout" in status["last_reload_error"]
        async with LspClient.over_process(daemon.client_argv("pyright")) as client:
            assert "capabilities" in await client.initialize(py_project)


def _doctor(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [LENSMUX, "doctor", *args], env=env, capture_output=True, text=True, timeout=180, stdin=subprocess.DEVNULL
    )


def test_doctor_reports_a_missing_server_binary(tmp_path: Path) -> None:
    env = lensmux_env(tmp_path)
    config = tmp_path / "c.toml"
    config.write_text('[servers.ghost]\ncommand = "no-such-ls"\n')
    result = _doctor(env, "--config", str(config), "--runtime-dir", str(tmp_path / "rt"), "--quick")
    assert result.returncode != 0
    line = next(ln for ln in result.stdout.splitlines() if "server ghost" in ln)
    assert line.startswith("FAIL") and "no-such-ls" in line and "->" in line
    assert any(ln.startswith("ok") and "server clangd" in ln for ln in result.stdout.splitlines())


def test_doctor_reports_a_runtime_dir_others_can_reach(tmp_path: Path) -> None:
    env = lensmux_env(tmp_path)
    runtime_dir = tmp_path / "rt"
    runtime_dir.mkdir()
    os.chmod(runtime_dir, 0o755)
    result = _doctor(env, "--runtime-dir", str(runtime_dir), "--quick")
    assert result.returncode != 0
    line = next(ln for ln in result.stdout.splitlines() if "runtime directory" in ln)
    assert line.startswith("FAIL") and "0755" in line and "chmod 700" in line
    os.chmod(runtime_dir, 0o700)
    assert _doctor(env, "--runtime-dir", str(runtime_dir), "--quick").returncode == 0
