"""Run a real `lensmux serve --foreground` in a subprocess for integration tests."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

VENV_BIN = Path(sys.executable).parent
LENSMUX = str(VENV_BIN / "lensmux")


def _call(runtime_dir: Path, method: str, params: Any = None, timeout: float = 30) -> Any:
    """One control-socket request with plain sockets (no lensmux code)."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(timeout)
        sock.connect(str(runtime_dir / "lensmux.sock"))
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).encode()
        sock.sendall(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        buf = b""
        while b"\r\n\r\n" not in buf:
            chunk = sock.recv(65536)
            if not chunk:
                raise ConnectionError("daemon closed the control connection")
            buf += chunk
        head, _, rest = buf.partition(b"\r\n\r\n")
        length = int(head.split(b":", 1)[1])
        while len(rest) < length:
            chunk = sock.recv(65536)
            if not chunk:
                raise ConnectionError("daemon closed the control connection")
            rest += chunk
    message: dict[str, Any] = json.loads(rest[:length])
    if "error" in message:
        raise RuntimeError(f"control error: {message['error']}")
    return message["result"]


def process_alive(pid: int) -> bool:
    """True if `pid` exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError):
        return False


def descendants(pid: int) -> list[int]:
    """Every live process below `pid` in the process tree."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(int(entry.name))
    out: list[int] = []
    todo = list(children.get(pid, []))
    while todo:
        child = todo.pop()
        out.append(child)
        todo.extend(children.get(child, []))
    return [p for p in out if process_alive(p)]


def wait_until(predicate: Any, timeout: float = 30, interval: float = 0.05, what: str = "condition") -> Any:
    """Poll until `predicate()` is truthy; raise AssertionError after `timeout`."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(interval)


class DaemonProc:
    """A live daemon subprocess and its directories."""

    def __init__(self, proc: subprocess.Popen[bytes], runtime_dir: Path, env: dict[str, str], log: Path) -> None:
        self.proc = proc
        self.runtime_dir = runtime_dir
        self.env = env
        self.log = log

    @property
    def pid(self) -> int:
        """The daemon's pid."""
        return self.proc.pid

    def call(self, method: str, params: Any = None, timeout: float = 30) -> Any:
        """A control request."""
        return _call(self.runtime_dir, method, params, timeout)

    def status(self) -> dict[str, Any]:
        """`lensmux/status` as a dict."""
        result: dict[str, Any] = self.call("lensmux/status")
        return result

    def instances(self, server: str | None = None) -> list[dict[str, Any]]:
        """Live instances, optionally of one server."""
        return [i for i in self.status()["instances"] if server is None or i["server"] == server]

    def client_argv(self, server: str) -> list[str]:
        """The command an editor would run to reach `server` through this daemon."""
        return [LENSMUX, "client", server, "--runtime-dir", str(self.runtime_dir), "--no-autostart"]

    def run_cli(self, *args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
        """`lensmux ARGS` against this daemon, as a user runs it; output captured, the exit status not checked."""
        return subprocess.run(
            [LENSMUX, *args, "--runtime-dir", str(self.runtime_dir)],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
            check=False,
        )

    def log_text(self) -> str:
        """Everything the daemon logged so far."""
        return self.log.read_text(errors="replace")

    def stop(self, timeout: float = 30) -> int:
        """SIGTERM and wait; return the exit status."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout)


def lensmux_env(base: Path, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """An environment whose XDG directories are private to one test."""
    env = dict(os.environ)
    # Short names: socket paths must stay under AF_UNIX's 108 bytes inside pytest's tmp dirs.
    for name, short in (("XDG_RUNTIME_DIR", "r"), ("XDG_STATE_HOME", "s"), ("XDG_CONFIG_HOME", "c")):
        path = base / short
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
        env[name] = str(path)
    env.pop("NOTIFY_SOCKET", None)
    env.pop("LISTEN_FDS", None)
    env["PATH"] = f"{VENV_BIN}:{env.get('PATH', '')}"
    env.update(extra or {})
    return env


@contextmanager
def running_daemon(
    base: Path, config_text: str = "", extra_env: Mapping[str, str] | None = None
) -> Iterator[DaemonProc]:
    """Start a daemon with a private runtime dir; stop it and check it exits cleanly."""
    env = lensmux_env(base, extra_env)
    runtime_dir = Path(env["XDG_RUNTIME_DIR"]) / "lensmux"
    config = base / "config.toml"
    if "[daemon.http]" not in config_text:
        # Test daemons run side by side: the HTTP port is opt-in per test.
        config_text += "\n[daemon.http]\nenabled = false\n"
    config.write_text(config_text)
    log = base / "daemon.log"
    with open(log, "wb") as log_file:
        proc = subprocess.Popen(
            [
                LENSMUX,
                "serve",
                "--foreground",
                "--runtime-dir",
                str(runtime_dir),
                "--config",
                str(config),
                "--log-level",
                "debug",
            ],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=log_file,
            stderr=log_file,
        )
    daemon = DaemonProc(proc, runtime_dir, env, log)
    try:

        def up() -> bool:
            if proc.poll() is not None:
                raise AssertionError(f"daemon exited early ({proc.returncode}):\n{daemon.log_text()}")
            try:
                daemon.call("lensmux/ping", timeout=2)
            except OSError:
                return False
            return True

        wait_until(up, timeout=30, what="daemon control socket")
        yield daemon
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
