"""One thread and one poll copying an editor's stdio to and from a daemon socket.

This is `lensmux client` when stdin and stdout are pipes or sockets (an editor's, an
agent's). A message costs one wake-up of one thread (a poll, a read, a send), as in a
bare splicer, and the process imports no event loop library: asyncio (with the ssl it
imports) and uvloop were 10 of the bridge's 27 MiB, once per editor or agent
(docs/benchmarks.md, "Memory of the daemon and the bridge when they only multiplex").

Each direction keeps what its destination could not take yet and stops reading its
source while that holds HIGH_WATER bytes or more. The editor's EOF becomes the daemon's
once everything before it was sent (answers may still come back); the daemon's EOF ends
the bridge once what it sent last has reached the editor (FLUSH_TIMEOUT_S at most); an
editor that closes its output ends it at once.

The usual message is read into a buffer reused for every read and written straight on,
in one method per direction: each Python call on that path is a measurable share of
what the bridge adds to a round trip (docs/benchmarks.md).

This module imports the standard library alone, and of it only what a bare interpreter
has nearly loaded (`select` and `_socket`, not `selectors` and `socket`, which import enum
and collections: 6 of the 7 ms this module's import took): once connected, the bridge
runs it in a fresh `python -I -S`, as the top-level module `splice` (bridge.py, `serve_fd`).
"""

from __future__ import annotations

import _socket
import os
import select
import stat
import time

CHUNK = 65536
HIGH_WATER = 64 * 1024
# How long the last bytes for the editor may take to leave once the daemon has closed.
FLUSH_TIMEOUT_S = 5.0

# What to watch for, and how to read what poll says: as selectors' PollSelector does, any flag
# but POLLOUT (POLLHUP, POLLERR) counts as readable, any but POLLIN as writable, of what the
# fd is watched for, so a hung-up or broken end is read or written and the call says what happened.
_READ, _WRITE = select.POLLIN, select.POLLOUT
_READABLE, _WRITABLE = ~select.POLLOUT, ~select.POLLIN


class _EditorGone(Exception):
    """The editor closed its output: nothing more can reach it."""


class _DaemonGone(Exception):
    """The daemon closed its side, or the connection broke."""


class Splice:
    """Copies `stdin_fd` to `sock` and `sock` to `stdout_fd` until either end is done."""

    def __init__(self, sock: _socket.socket, stdin_fd: int, stdout_fd: int) -> None:
        self._sock = sock
        self._sock_fd = sock.fileno()
        self._stdin = stdin_fd
        self._stdout = stdout_fd
        # What a destination has not taken yet, in order; nothing passes it.
        self._to_daemon = bytearray()
        self._to_editor = bytearray()
        self._editor_eof = False
        self._daemon_input_ended = False
        self._watches_stale = True
        self._in_buffers, self._out_buffer = (bytearray(CHUNK),), bytearray(CHUNK)
        self._in_view, self._out_view = memoryview(self._in_buffers[0]), memoryview(self._out_buffer)
        self._poll = select.poll()
        self._watched: dict[int, int] = {}
        # A pipe's write end turns readable when its reader closes (epoll, kqueue): that is how
        # an idle bridge learns the editor has gone. A socket's would be readable with data.
        self._watch_output = stat.S_ISFIFO(os.fstat(stdout_fd).st_mode)

    def run(self) -> None:
        """Copy until the daemon closes (then flush to the editor) or the editor closes its output."""
        for fd in (self._stdin, self._stdout):
            os.set_blocking(fd, False)
        self._sock.setblocking(False)
        try:
            self._copy()
        except _DaemonGone:
            self._flush_to_editor()
        except _EditorGone:
            pass
        finally:
            self._sock.close()

    def _copy(self) -> None:
        poll, stdin, sock_fd = self._poll.poll, self._stdin, self._sock_fd
        from_editor, from_daemon, watched = self._from_editor, self._from_daemon, self._watched
        self._rewatch()
        while True:
            for fd, events in poll():
                if fd == stdin:
                    from_editor()
                    continue
                # Only what the fd is watched for: a hung-up socket is not written to when nothing waits.
                wanted = watched.get(fd, 0)
                if fd == sock_fd:
                    if events & _WRITABLE and wanted & _WRITE:
                        self._send_waiting()
                    if events & _READABLE and wanted & _READ:
                        from_daemon()
                elif events & _READABLE and wanted & _READ:
                    raise _EditorGone
                else:
                    self._write_waiting()
            # While everything passes straight through, what is watched stays the same.
            if self._to_daemon or self._to_editor or self._watches_stale:
                self._rewatch()

    def _rewatch(self) -> None:
        """Watch each end for what it can do now: a source while its destination keeps up, a destination that owes."""
        self._watch(self._stdin, _READ if not self._editor_eof and len(self._to_daemon) < HIGH_WATER else 0)
        to_daemon = _WRITE if self._to_daemon else 0
        self._watch(self._sock_fd, (_READ if len(self._to_editor) < HIGH_WATER else 0) | to_daemon)
        self._watch(self._stdout, (_READ if self._watch_output else 0) | (_WRITE if self._to_editor else 0))
        # Once what is owed has left, the next turn watches for it no more.
        self._watches_stale = bool(self._to_daemon or self._to_editor)

    def _watch(self, fd: int, events: int) -> None:
        """Make the poll watch `fd` for `events` (none: not at all), touching it only on a change."""
        before = self._watched.get(fd, 0)
        if events == before:
            return
        if not events:
            self._poll.unregister(fd)
            del self._watched[fd]
            return
        if before:
            self._poll.modify(fd, events)
        else:
            self._poll.register(fd, events)
        self._watched[fd] = events

    def _from_editor(self) -> None:
        """Read what the editor wrote and send it on, or queue it behind what still waits."""
        try:
            size = os.readv(self._stdin, self._in_buffers)
        except BlockingIOError:
            return
        except OSError:
            size = 0
        if not size:
            self._editor_eof = True
            self._watches_stale = True
            if not self._to_daemon:
                self._end_daemon_input()
            return
        data = self._in_view[:size]
        if self._to_daemon:
            self._to_daemon += data  # the socket's next write event sends it
            return
        try:
            sent = self._sock.send(data)
        except BlockingIOError:
            sent = 0
        except OSError as exc:
            raise _DaemonGone from exc
        if sent < size:
            self._to_daemon += data[sent:]

    def _from_daemon(self) -> None:
        """Receive what the daemon sent and write it to the editor, or queue it behind what still waits."""
        try:
            size = self._sock.recv_into(self._out_buffer)
        except BlockingIOError:
            return
        except OSError as exc:
            raise _DaemonGone from exc
        if not size:
            raise _DaemonGone
        data = self._out_view[:size]
        if self._to_editor:
            self._to_editor += data  # stdout's next write event writes it
            return
        try:
            written = os.write(self._stdout, data)
        except BlockingIOError:
            written = 0
        except OSError as exc:
            raise _EditorGone from exc
        if written < size:
            self._to_editor += data[written:]

    def _send_waiting(self) -> None:
        """Send what waits for the daemon; once it has all gone after the editor's EOF, pass the EOF on."""
        try:
            del self._to_daemon[: self._sock.send(self._to_daemon)]
        except BlockingIOError:
            pass
        except OSError as exc:
            raise _DaemonGone from exc
        if self._editor_eof and not self._to_daemon:
            self._end_daemon_input()

    def _end_daemon_input(self) -> None:
        # The editor's EOF becomes the daemon's: it ends the session, answers may still come back.
        if self._daemon_input_ended:
            return
        self._daemon_input_ended = True
        try:
            self._sock.shutdown(_socket.SHUT_WR)
        except OSError:
            pass

    def _write_waiting(self) -> None:
        """Write what waits for the editor."""
        try:
            del self._to_editor[: os.write(self._stdout, self._to_editor)]
        except BlockingIOError:
            pass
        except OSError as exc:
            raise _EditorGone from exc

    def _flush_to_editor(self) -> None:
        """What the daemon sent last (the answer to `shutdown`) still reaches the editor, within the timeout."""
        deadline = time.monotonic() + FLUSH_TIMEOUT_S
        self._watch(self._stdin, 0)
        self._watch(self._sock_fd, 0)
        try:
            while self._to_editor:
                self._watch(self._stdout, _WRITE)
                left = deadline - time.monotonic()
                if left <= 0 or not self._poll.poll(left * 1000):
                    return
                self._write_waiting()
        except _EditorGone:
            return


def serve_fd(fd: int) -> None:
    """The bridge after its exec: copy between stdin, stdout and the connected socket `fd`."""
    Splice(_socket.socket(fileno=fd), 0, 1).run()
