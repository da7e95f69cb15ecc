"""`lensmux client`: a stdio ↔ Unix-socket byte pipe that editors spawn as their server.

Bytes are copied untouched in both directions; the daemon does all parsing.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

from lensmux.daemon.paths import server_socket

AUTOSTART_WAIT = 30.0


class BridgeError(Exception):
    """The bridge cannot reach a daemon."""


def _connect(path: Path) -> socket.socket | None:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(str(path))
    except (FileNotFoundError, ConnectionRefusedError):
        sock.close()
        return None
    return sock


def start_daemon(runtime_dir: Path, config: Path | None) -> subprocess.Popen[bytes]:
    """Start `lensmux serve --foreground` detached from this process's session."""
    argv = [sys.executable, "-m", "lensmux.daemon.cli.main", "serve", "--foreground", "--runtime-dir", str(runtime_dir)]
    if config is not None:
        argv += ["--config", str(config)]
    log_dir = Path(os.environ.get("XDG_STATE_HOME") or Path.home() / ".local/state") / "lensmux"
    log_dir.mkdir(parents=True, exist_ok=True)
    with open(log_dir / "daemon.log", "ab") as log_file:
        return subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=log_file, stderr=log_file, start_new_session=True, close_fds=True
        )


def connect_or_start(runtime_dir: Path, server: str, autostart: bool, config: Path | None = None) -> socket.socket:
    """Connect to the server's socket, starting a daemon first if allowed."""
    path = server_socket(runtime_dir, server)
    sock = _connect(path)
    if sock is not None:
        return sock
    if not autostart:
        raise BridgeError(f"no lensmux daemon listens on {path} (and --no-autostart was given)")
    child = start_daemon(runtime_dir, config)
    deadline = time.monotonic() + AUTOSTART_WAIT
    while time.monotonic() < deadline:
        sock = _connect(path)
        if sock is not None:
            return sock
        if child.poll() is not None:
            # It may have lost a race with another starting daemon; use that one.
            sock = _connect(path)
            if sock is not None:
                return sock
            raise BridgeError(
                f"the daemon exited with status {child.returncode}; see its log in ~/.local/state/lensmux/daemon.log"
            )
        time.sleep(0.05)
    raise BridgeError(f"the daemon did not open {path} within {AUTOSTART_WAIT:.0f}s")


def _pump_in(sock: socket.socket, fd: int) -> None:
    try:
        while chunk := os.read(fd, 65536):
            sock.sendall(chunk)
    except OSError:
        pass
    finally:
        try:
            sock.shutdown(socket.SHUT_WR)
        except OSError:
            pass


def run_bridge(sock: socket.socket) -> int:
    """Copy stdin to the socket and the socket to stdout until the daemon closes."""
    stdin_fd, stdout_fd = sys.stdin.fileno(), sys.stdout.fileno()
    # The stdin pump ends on EOF from the editor; it is a daemon thread because
    # a blocked read cannot be interrupted when the daemon side ends first.
    threading.Thread(target=_pump_in, args=(sock, stdin_fd), daemon=True, name="stdin-pump").start()
    try:
        while chunk := sock.recv(65536):
            view = memoryview(chunk)
            while view:
                written = os.write(stdout_fd, view)
                view = view[written:]
    except (BrokenPipeError, ConnectionResetError):
        pass
    finally:
        sock.close()
    return 0
