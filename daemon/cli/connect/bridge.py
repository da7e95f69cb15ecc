"""`lensmux client`: a stdio ↔ Unix-socket byte pipe that editors spawn as their server.

Bytes are copied untouched in both directions; the daemon does all parsing.
When stdin and stdout are pipes or sockets (an editor's), one thread with one
poll moves them (splice.py): a message costs one wake-up of one thread, as in
a bare splicer, instead of a hand-over between two threads under the GIL.
Anything else (a terminal, a file) gets two blocking threads. Nothing on this
path imports the daemon's configuration, an event loop library or the search
stack: an editor or agent pays for this process as long as it runs.

For the same reason the splice does not run in the interpreter that connected: the
console script's start (`site`, the entry point, the command line) leaves objects
behind that nothing uses afterwards. Once connected, the process execs
`python -I -S`, which imports splice.py alone (the standard library's os,
select, _socket, stat and time) and copies over the inherited socket: same pid,
same stdio, about 3 MiB less resident (docs/benchmarks.md).
"""

from __future__ import annotations

import os
import socket
import stat
import sys
import threading
from pathlib import Path

from lensmux.daemon.cli.connect import splice
from lensmux.daemon.cli.connect.splice import Splice
from lensmux.daemon.paths import server_socket

# Run by the lean interpreter: splice.py's folder on its path, splice.py as a module of its own
# (its compiled file is the one the package import wrote), then the copy.
_LEAN_SPLICE = "import sys; sys.path.insert(0, sys.argv[1]); import splice; splice.serve_fd(int(sys.argv[2]))"


class BridgeError(Exception):
    """The bridge cannot reach a daemon."""


def connect(path: Path) -> socket.socket | None:
    """A connected socket, or None if nothing listens there."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(str(path))
    except (FileNotFoundError, ConnectionRefusedError):
        sock.close()
        return None
    return sock


def connect_or_start(runtime_dir: Path, server: str, autostart: bool, config: Path | None = None) -> socket.socket:
    """Connect to the server's socket, starting a daemon first if allowed."""
    path = server_socket(runtime_dir, server)
    sock = connect(path)
    if sock is not None:
        return sock
    # Imported only now: a bridge whose daemon listens never needs them (cli/main.py connects first).
    from lensmux.daemon.cli.connect.autostart import ensure_daemon
    from lensmux.daemon.cli.connect.control_client import ControlClientError

    if not autostart:
        raise BridgeError(f"no lensmux daemon listens on {path} (and --no-autostart was given)")
    try:
        ensure_daemon(runtime_dir, True, config)
    except ControlClientError as exc:
        raise BridgeError(str(exc)) from exc
    # The daemon binds every socket before its control socket answers.
    sock = connect(path)
    if sock is None:
        raise BridgeError(f"the daemon in {runtime_dir} does not serve {server!r} (see lensmux status)")
    return sock


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
    if _pollable(stdin_fd) and _pollable(stdout_fd):
        if stdin_fd == 0 and stdout_fd == 1:
            _exec_lean(sock)  # returns only if the exec failed
        Splice(sock, stdin_fd, stdout_fd).run()
        return 0
    return _run_threads(sock, stdin_fd, stdout_fd)


def _exec_lean(sock: socket.socket) -> None:
    """Become `python -I -S` running splice.py over `sock`; return if that cannot be done."""
    source = Path(splice.__file__)
    if not sys.executable or not source.is_file():
        return  # no interpreter to run, or splice.py not a file of its own (a zip)
    fd = sock.fileno()
    argv = [sys.executable, "-I", "-S", "-c", _LEAN_SPLICE, str(source.parent), str(fd)]
    sys.stdout.flush()
    sys.stderr.flush()
    os.set_inheritable(fd, True)
    try:
        os.execv(sys.executable, argv)
    except OSError:
        os.set_inheritable(fd, False)


def _pollable(fd: int) -> bool:
    """Whether poll can wait on `fd` (a regular file or a terminal is always ready, or never says)."""
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


def _run_threads(sock: socket.socket, stdin_fd: int, stdout_fd: int) -> int:
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
