"""`lensmux client`: a stdio ↔ Unix-socket byte pipe that editors spawn as their server.

Bytes are copied untouched in both directions; the daemon does all parsing.
When stdin and stdout are pipes or sockets (an editor's), one event loop
(uvloop when installed) moves them with asyncio protocols: a message costs one
wake-up of one thread, as in a bare splicer, instead of a hand-over between two
threads under the GIL. Anything else (a terminal, a file) gets two blocking threads.
"""

from __future__ import annotations

import asyncio
import os
import socket
import stat
import sys
import threading
from pathlib import Path
from typing import BinaryIO

from lensmux.daemon.cli.autostart import ensure_daemon
from lensmux.daemon.cli.control_client import ControlClientError
from lensmux.daemon.paths import server_socket


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


def connect_or_start(runtime_dir: Path, server: str, autostart: bool, config: Path | None = None) -> socket.socket:
    """Connect to the server's socket, starting a daemon first if allowed."""
    path = server_socket(runtime_dir, server)
    sock = _connect(path)
    if sock is not None:
        return sock
    if not autostart:
        raise BridgeError(f"no lensmux daemon listens on {path} (and --no-autostart was given)")
    try:
        ensure_daemon(runtime_dir, True, config)
    except ControlClientError as exc:
        raise BridgeError(str(exc)) from exc
    # The daemon binds every socket before its control socket answers.
    sock = _connect(path)
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
        return _run_loop(sock, stdin_fd, stdout_fd)
    return _run_threads(sock, stdin_fd, stdout_fd)


def _pollable(fd: int) -> bool:
    """Whether an event loop can watch `fd` (epoll refuses regular files and most devices)."""
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


# How long the last bytes for the editor may take to leave once the daemon has closed.
_FLUSH_TIMEOUT_S = 5.0


class _End(asyncio.Protocol):
    """One transport of the bridge: what it reads goes to `peer`; while its writes back up, `feeder` pauses."""

    def __init__(self, on_eof: asyncio.Future[str], eof_reason: str) -> None:
        self.peer: asyncio.WriteTransport | None = None
        self.feeder: asyncio.ReadTransport | None = None
        self.on_eof = on_eof
        self.eof_reason = eof_reason
        self.lost = on_eof.get_loop().create_future()

    def data_received(self, data: bytes) -> None:
        if self.peer is not None:
            self.peer.write(data)

    def eof_received(self) -> bool:
        if not self.on_eof.done():
            self.on_eof.set_result(self.eof_reason)
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self.eof_received()
        if not self.lost.done():
            self.lost.set_result(None)

    def pause_writing(self) -> None:
        if self.feeder is not None:
            self.feeder.pause_reading()

    def resume_writing(self) -> None:
        if self.feeder is not None:
            self.feeder.resume_reading()


async def _bridge(sock: socket.socket, stdin: BinaryIO, stdout: BinaryIO) -> None:
    loop = asyncio.get_running_loop()
    ended: asyncio.Future[str] = loop.create_future()
    editor_done: asyncio.Future[str] = loop.create_future()
    to_editor = _End(ended, "editor closed its output")
    from_daemon = _End(ended, "daemon closed")
    from_editor = _End(editor_done, "editor closed its input")
    # Each side's peer is set before that side can receive anything.
    out, _ = await loop.connect_write_pipe(lambda: to_editor, stdout)
    from_daemon.peer = out
    daemon, _ = await loop.create_unix_connection(lambda: from_daemon, sock=sock)
    from_editor.peer = daemon
    source, _ = await loop.connect_read_pipe(lambda: from_editor, stdin)
    to_editor.feeder = daemon
    from_daemon.feeder = source

    def editor_closed(_: asyncio.Future[str]) -> None:
        # The editor's EOF becomes the daemon's (it ends the session); answers may still come back.
        if not daemon.is_closing():
            daemon.write_eof()

    editor_done.add_done_callback(editor_closed)
    await ended
    daemon.close()
    # Whatever the daemon sent last (the answer to `shutdown`) still reaches the editor.
    out.close()
    try:
        await asyncio.wait_for(to_editor.lost, _FLUSH_TIMEOUT_S)
    except TimeoutError:
        pass


def _run_loop(sock: socket.socket, stdin_fd: int, stdout_fd: int) -> int:
    with open(stdin_fd, "rb", 0, closefd=False) as stdin, open(stdout_fd, "wb", 0, closefd=False) as stdout:
        try:
            import uvloop
        except ImportError:
            asyncio.run(_bridge(sock, stdin, stdout))
        else:
            uvloop.run(_bridge(sock, stdin, stdout))
    return 0
