"""Security: a private runtime directory, owner-only sockets, peers of another uid refused.

The refusal tests connect as `nobody` (setpriv), so they need root. A socket of
mode 0600 already stops another user at connect() with EACCES; to reach the
SO_PEERCRED check behind it, one test opens the socket and its directories up
first, as a careless administrator might.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.daemon_proc import DaemonProc, running_daemon, wait_until
from support.fake_servers import fake_server_config

from resilience.fake_daemon import control_socket, fake_socket, log_count, log_length, make_workspace, new_log_lines
from resilience.wire_client import WireClient

SYSTEM_PYTHON = Path("/usr/bin/python3")
NOBODY_UID = 65534
as_another_user = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("setpriv") is None or not SYSTEM_PYTHON.exists(),
    reason="connecting as another user needs root, setpriv and /usr/bin/python3",
)

# Run as nobody: connect, send a ping, report what happened in one word.
PROBE = r"""
import json, socket, sys
sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
sock.settimeout(20)
try:
    sock.connect(sys.argv[1])
except PermissionError:
    print("EACCES")
    raise SystemExit(0)
body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "lensmux/ping"}).encode()
try:
    sock.sendall(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    data = sock.recv(65536)
except (BrokenPipeError, ConnectionResetError):
    data = b""
print("ANSWERED" if data else "CLOSED")
"""


def connect_as_nobody(path: Path) -> str:
    """What `nobody` gets when it connects to `path` and sends a request."""
    proc = subprocess.run(
        ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", str(SYSTEM_PYTHON), "-c", PROBE, str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


@pytest.fixture(scope="module")
def open_base() -> Iterator[Path]:
    """A directory other users may traverse (pytest's own temporary tree is 0700)."""
    base = Path(tempfile.mkdtemp(prefix="lensmux-security-"))
    base.chmod(0o711)
    try:
        yield base
    finally:
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture(scope="module")
def shared_daemon(open_base: Path) -> Iterator[DaemonProc]:
    """A daemon with the fake server, under a traversable base directory."""
    with running_daemon(open_base / "d", fake_server_config()) as proc:
        yield proc


@pytest.fixture
def daemon(shared_daemon: DaemonProc) -> Iterator[DaemonProc]:
    """The shared daemon, its directory and sockets put back to their modes after each test."""
    yield shared_daemon
    runtime_dir = shared_daemon.runtime_dir
    for path in runtime_dir.glob("*.sock"):
        path.chmod(0o600)
    runtime_dir.chmod(0o700)
    runtime_dir.parent.chmod(0o700)


def mode(path: Path) -> int:
    """Permission bits of a path."""
    return stat.S_IMODE(path.lstat().st_mode)


def test_runtime_dir_is_0700_and_every_socket_0600(daemon: DaemonProc) -> None:
    info = daemon.runtime_dir.lstat()
    assert stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid()
    assert mode(daemon.runtime_dir) == 0o700
    sockets = sorted(daemon.runtime_dir.glob("*.sock"))
    assert {p.name for p in sockets} >= {"lensmux.sock", "fake.sock"}
    for path in sockets:
        assert stat.S_ISSOCK(path.lstat().st_mode)
        assert mode(path) == 0o600, path.name


def test_a_runtime_dir_others_can_enter_is_made_private_at_start(tmp_path_factory: pytest.TempPathFactory) -> None:
    base = tmp_path_factory.mktemp("private")
    runtime_dir = base / "r" / "lensmux"
    runtime_dir.mkdir(parents=True)
    runtime_dir.chmod(0o755)
    with running_daemon(base) as proc:
        assert proc.runtime_dir == runtime_dir
        assert mode(runtime_dir) == 0o700
        assert log_count(proc, "was mode 0755, open to other users; making it 0700") == 1


@as_another_user
def test_another_user_cannot_connect_to_owner_only_sockets(daemon: DaemonProc) -> None:
    refusals = log_count(daemon, "refused connection")
    # The private directory alone stops it.
    assert connect_as_nobody(control_socket(daemon)) == "EACCES"
    # With the directory opened up, each socket's own 0600 still does.
    daemon.runtime_dir.parent.chmod(0o711)
    daemon.runtime_dir.chmod(0o711)
    for path in (control_socket(daemon), fake_socket(daemon)):
        assert connect_as_nobody(path) == "EACCES"
    # Refused by the kernel: the daemon never saw these connections.
    assert log_count(daemon, "refused connection") == refusals


@as_another_user
def test_peer_credentials_refuse_another_user_on_open_sockets(daemon: DaemonProc, open_base: Path) -> None:
    daemon.runtime_dir.parent.chmod(0o711)
    daemon.runtime_dir.chmod(0o711)
    mark = log_length(daemon)
    for n, path in enumerate((control_socket(daemon), fake_socket(daemon)), start=1):
        path.chmod(0o666)
        assert connect_as_nobody(path) == "CLOSED"

        def refusals_logged(n: int = n) -> bool:
            return sum("refused connection" in line for line in new_log_lines(daemon, mark)) == n

        wait_until(refusals_logged, timeout=10, what="the refusal log line")
    refusals = [line for line in new_log_lines(daemon, mark) if "refused connection" in line]
    assert all(f"of uid {NOBODY_UID}" in line for line in refusals)
    assert "lensmux.sock" in refusals[0] and "fake.sock" in refusals[1]
    # The daemon's own user is still served on the same sockets.
    assert daemon.status()["pid"] == daemon.pid
    with WireClient(fake_socket(daemon), name="owner") as owner:
        owner.initialize(make_workspace(open_base / "ws"))
        assert owner.result("fake/echo", {"me": True}) == {"me": True}
