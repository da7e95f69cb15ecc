"""Finding the user's one daemon, and starting it when none runs.

Every command that needs a daemon (`client`, `serve`, `search`, `mcp`) comes
through here, so concurrent starts behave alike: each may spawn a daemon, the
runtime directory's lock lets exactly one of them serve, and the others exit
with status 0 while their starters wait for the winner.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

from lensmux.daemon import paths
from lensmux.daemon.cli.connect.control_client import ControlClient, ControlClientError, DaemonNotRunning

AUTOSTART_WAIT = 30.0
# How long a starter waits for its own child to exit after another daemon won.
LOSER_EXIT_WAIT = 15.0


class AutostartFailed(ControlClientError):
    """No daemon runs and none could be started."""


def log_file() -> Path:
    """Where an autostarted daemon writes its log."""
    return Path(os.environ.get("XDG_STATE_HOME") or Path.home() / ".local/state") / "lensmux" / "daemon.log"


def ping(runtime_dir: Path, timeout: float = 2.0) -> int | None:
    """The pid of the daemon answering in `runtime_dir`, or None."""
    try:
        with ControlClient(runtime_dir, timeout=timeout) as ctl:
            result = ctl.call("lensmux/ping")
    except (ControlClientError, OSError):
        return None
    pid = result.get("pid") if isinstance(result, dict) else None
    return pid if isinstance(pid, int) else None


def _socket_answers(runtime_dir: Path) -> bool:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(str(paths.control_socket(runtime_dir)))
    except OSError:
        return False
    finally:
        sock.close()
    return True


def discover_runtime_dir(explicit: str | None) -> Path:
    """`--runtime-dir` if given, else the first candidate where a daemon listens, else the default."""
    if explicit:
        return Path(explicit)
    candidates = paths.runtime_dir_candidates()
    for candidate in candidates:
        if _socket_answers(candidate):
            return candidate
    return candidates[0]


def start_daemon(runtime_dir: Path, config: Path | None) -> subprocess.Popen[bytes]:
    """Start `lensmux serve --foreground` detached from this process's session."""
    argv = [sys.executable, "-m", "lensmux.daemon.cli.main", "serve", "--foreground", "--runtime-dir", str(runtime_dir)]
    if config is not None:
        argv += ["--config", str(config)]
    log = log_file()
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "ab") as out:
        return subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=out, stderr=out, start_new_session=True, close_fds=True
        )


def _reap(child: subprocess.Popen[bytes]) -> None:
    """Wait for a child that lost the race to exit, so none is left behind."""
    try:
        child.wait(LOSER_EXIT_WAIT)
    except subprocess.TimeoutExpired:
        # It neither serves nor exits: it must not linger beside the winner.
        child.terminate()
        child.wait(5)


def ensure_daemon(runtime_dir: Path, autostart: bool = True, config: Path | None = None) -> int:
    """The pid of the daemon serving `runtime_dir`, started first if none answers and `autostart`."""
    pid = ping(runtime_dir)
    if pid is not None:
        return pid
    if not autostart:
        raise DaemonNotRunning(
            f"no lensmux daemon at {paths.control_socket(runtime_dir)} (and --no-autostart was given)"
        )
    child = start_daemon(runtime_dir, config)
    deadline = time.monotonic() + AUTOSTART_WAIT
    while time.monotonic() < deadline:
        pid = ping(runtime_dir)
        if pid is not None:
            if pid != child.pid:
                _reap(child)
            return pid
        code = child.poll()
        if code is not None:
            if code != 0:
                raise AutostartFailed(f"the daemon exited with status {code}; see its log in {log_file()}")
            # It lost the lock to a daemon that is not answering yet, or is stopping: wait, or start anew.
            time.sleep(0.2)
            if ping(runtime_dir) is None and not _socket_answers(runtime_dir):
                child = start_daemon(runtime_dir, config)
            continue
        time.sleep(0.05)
    raise AutostartFailed(f"no lensmux daemon answered in {runtime_dir} within {AUTOSTART_WAIT:.0f}s")


def wait_exited(pid: int, timeout: float) -> bool:
    """Wait until process `pid` is gone; False if it still runs after `timeout`."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        except PermissionError:
            return False
        try:
            with open(f"/proc/{pid}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                    return True
        except OSError:
            return True
        time.sleep(0.05)
    return False
