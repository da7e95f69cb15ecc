"""Exactly one daemon per runtime directory: an flock held for the daemon's whole life.

Sockets alone cannot decide who serves: two daemons starting at once both see
no socket, and one started while another stops would take the sockets over.
The kernel drops an flock when its holder exits, however it exits, so a stale
lock never outlives its daemon.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

LOCK_NAME = "lensmux.lock"


class DaemonLockHeld(Exception):
    """Another daemon holds the runtime directory's lock."""

    def __init__(self, path: Path, pid: int | None) -> None:
        super().__init__(f"another lensmux daemon (pid {pid or '?'}) holds {path}")
        self.path = path
        self.pid = pid


def lock_path(runtime_dir: Path) -> Path:
    """The lock file's path."""
    return runtime_dir / LOCK_NAME


def _read_pid(fd: int) -> int | None:
    try:
        data = os.pread(fd, 32, 0)
        return int(data.decode().strip() or "0") or None
    except (OSError, ValueError):
        return None


class RuntimeLock:
    """The held lock; `release` (or process exit) frees it."""

    def __init__(self, fd: int, path: Path) -> None:
        self._fd = fd
        self.path = path

    @classmethod
    def acquire(cls, runtime_dir: Path) -> RuntimeLock:
        """Take the lock without waiting; DaemonLockHeld if another daemon has it."""
        path = lock_path(runtime_dir)
        # O_CLOEXEC: a server process must never inherit (and so keep) the lock.
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            pid = _read_pid(fd)
            os.close(fd)
            raise DaemonLockHeld(path, pid) from None
        except BaseException:
            os.close(fd)
            raise
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        return cls(fd, path)

    def release(self) -> None:
        """Free the lock (the daemon is done serving)."""
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
