"""The bridge's splice over real pipes and a socket pair: bytes intact both ways, and each end ending it right.

The test plays the editor (the other ends of the stdin and stdout pipes) and the daemon
(the other end of the socket pair); `Splice.run` runs in a thread, as the only work of
`lensmux client`.
"""

from __future__ import annotations

import os
import select
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from lensmux.daemon.cli.connect.splice import HIGH_WATER, Splice

# Larger than a pipe's buffer and the splice's high-water mark, so both directions back up.
BIG = 1024 * 1024 + 17
# What a Linux pipe holds by default.
PIPE_BYTES = 65536


@dataclass
class Ends:
    """The editor's and the daemon's ends of one running splice."""

    editor_in: int  # the editor writes here (the bridge's stdin)
    editor_out: int  # the editor reads here (the bridge's stdout)
    daemon: socket.socket
    thread: threading.Thread
    open_fds: set[int]

    def close(self, fd: int) -> None:
        """Close one of the pipes' ends, once (a number closed twice may be someone else's by then)."""
        if fd in self.open_fds:
            self.open_fds.remove(fd)
            os.close(fd)

    def read_editor(self, size: int) -> bytes:
        data = bytearray()
        while len(data) < size:
            if not select.select([self.editor_out], [], [], 30)[0]:
                raise TimeoutError(f"the editor got {len(data)} of {size} bytes")
            chunk = os.read(self.editor_out, size - len(data))
            if not chunk:
                break
            data += chunk
        return bytes(data)

    def read_daemon(self, size: int) -> bytes:
        data = bytearray()
        while len(data) < size:
            chunk = self.daemon.recv(size - len(data))
            if not chunk:
                break
            data += chunk
        return bytes(data)


@contextmanager
def splice() -> Iterator[Ends]:
    stdin_r, stdin_w = os.pipe()
    stdout_r, stdout_w = os.pipe()
    bridge_sock, daemon_sock = socket.socketpair()
    daemon_sock.settimeout(30)
    thread = threading.Thread(target=Splice(bridge_sock, stdin_r, stdout_w).run, daemon=True)
    thread.start()
    ends = Ends(stdin_w, stdout_r, daemon_sock, thread, {stdin_r, stdin_w, stdout_r, stdout_w})
    try:
        yield ends
    finally:
        # The daemon's side goes first: the splice ends before the pipes it watches are closed.
        daemon_sock.close()
        thread.join(30)
        for fd in list(ends.open_fds):
            ends.close(fd)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _payload(size: int, seed: int) -> bytes:
    return bytes((i * 7 + seed) % 251 for i in range(size))


def test_large_messages_cross_intact_both_ways_while_each_side_backs_up() -> None:
    to_daemon, to_editor = _payload(BIG, 1), _payload(BIG, 2)
    with splice() as ends:
        writer = threading.Thread(target=_write_all, args=(ends.editor_in, to_daemon))
        writer.start()
        ends.daemon.sendall(to_editor[:HIGH_WATER])  # waits in the pipe and the splice: nobody reads yet
        assert ends.read_daemon(BIG) == to_daemon
        sender = threading.Thread(target=ends.daemon.sendall, args=(to_editor[HIGH_WATER:],))
        sender.start()
        assert ends.read_editor(BIG) == to_editor
        writer.join(30)
        sender.join(30)


def test_the_editors_eof_becomes_the_daemons_and_the_last_answer_still_arrives() -> None:
    # More than the pipe holds, less than it and the splice together: the daemon can close before
    # the editor reads anything, and what the splice still holds then must reach the editor.
    last_answer = _payload(PIPE_BYTES + HIGH_WATER // 2, 3)
    with splice() as ends:
        os.write(ends.editor_in, b"exit")
        ends.close(ends.editor_in)
        assert ends.read_daemon(4) == b"exit"
        assert ends.daemon.recv(1) == b"", "the daemon sees the editor's EOF"
        ends.daemon.sendall(last_answer)
        ends.daemon.close()
        # Not a measurement: time for the splice to read the daemon's EOF before the editor reads.
        time.sleep(0.3)
        assert ends.read_editor(len(last_answer)) == last_answer
        ends.thread.join(30)
        assert not ends.thread.is_alive(), "the daemon's EOF ends the bridge"


def test_an_editor_that_closes_its_output_ends_the_bridge_and_the_daemon_hears_it() -> None:
    with splice() as ends:
        ends.close(ends.editor_out)
        ends.thread.join(30)
        assert not ends.thread.is_alive()
        assert ends.daemon.recv(1) == b""
