"""What resilience tests read from a daemon serving the scripted fake server."""

from __future__ import annotations

from pathlib import Path

from support.daemon_proc import DaemonProc, wait_until
from support.fake_servers import fake_workspace

CONNECTION_TASK_FAILED = "connection task failed"


def make_workspace(path: Path) -> Path:
    """A workspace root (a git marker and one text file)."""
    return fake_workspace(path)


def fake_socket(daemon: DaemonProc) -> Path:
    """The fake server's socket."""
    return daemon.runtime_dir / "fake.sock"


def control_socket(daemon: DaemonProc) -> Path:
    """The daemon's control socket."""
    return daemon.runtime_dir / "lensmux.sock"


def log_count(daemon: DaemonProc, text: str) -> int:
    """How many log lines contain `text`."""
    return sum(text in line for line in daemon.log_text().splitlines())


def daemon_tracebacks(daemon: DaemonProc) -> int:
    """Tracebacks the daemon itself logged (a server's stderr is logged with a prefix)."""
    return sum(line.startswith("Traceback") for line in daemon.log_text().splitlines())


def new_log_lines(daemon: DaemonProc, since: int) -> list[str]:
    """Log lines after the first `since` lines."""
    return daemon.log_text().splitlines()[since:]


def log_length(daemon: DaemonProc) -> int:
    """Number of lines logged so far."""
    return len(daemon.log_text().splitlines())


def wait_for_log_line(daemon: DaemonProc, since: int, *fragments: str, timeout: float = 10) -> list[str]:
    """The log lines after the first `since` that contain every fragment; fails the test if none comes in time."""

    def matching() -> list[str]:
        return [line for line in new_log_lines(daemon, since) if all(f in line for f in fragments)]

    found: list[str] = wait_until(matching, timeout=timeout, what=f"a log line naming {fragments!r}")
    return found


def memory_kib(pid: int, field: str) -> int:
    """A memory figure of a process from /proc/<pid>/status (VmRSS, VmHWM) in KiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1])
    raise AssertionError(f"/proc/{pid}/status has no {field}")
