"""Backpressure: a client that stops reading is disconnected when its queue is full.

The daemons run with small client queues. A stalled client (it never
reads its socket) asks for a flood; the daemon drops it with a log line, while
a reading client of the same server instance keeps getting everything and its
answers, and the daemon's memory stays bounded.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.daemon_proc import DaemonProc, running_daemon, wait_until
from support.fake_servers import fake_server_config

from resilience.fake_daemon import (
    CONNECTION_TASK_FAILED,
    fake_socket,
    log_count,
    make_workspace,
    memory_kib,
)
from resilience.wire_client import WireClient, WireClosed, frame_json

# Queues well below the default (4096), so a stalled client fills one soon. The
# flood test's reading client must keep up whenever the machine is busy: with 64
# messages of slack a reader descheduled for a few tens of milliseconds is
# (rightly) dropped too, so that test gets 8192 (still well under the flood,
# so the stalled client overflows; a 2048 queue dropped the reader under CI load).
FLOOD_QUEUE = 8192
BIG_ANSWER_QUEUE = 64
FLOOD = 20_000
MIB = 1024
MEMORY_BOUND_KIB = 200 * MIB


def queue_full(size: int) -> str:
    """The log line's reason for a client whose queue of `size` filled."""
    return f"send queue full ({size} messages)"


def small_queue_daemon(base: Path, size: int) -> Iterator[DaemonProc]:
    """A daemon whose clients get a send queue of `size` messages."""
    with running_daemon(base, fake_server_config(extra=f"[daemon]\nclient_queue_messages = {size}\n")) as daemon:
        yield daemon
        assert log_count(daemon, CONNECTION_TASK_FAILED) == 0


# Short directory names: socket paths must stay within AF_UNIX's 108 bytes.
@pytest.fixture
def flood_daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DaemonProc]:
    """Clients get an 8192-message queue."""
    yield from small_queue_daemon(tmp_path_factory.mktemp("flood"), FLOOD_QUEUE)


@pytest.fixture
def big_answer_daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DaemonProc]:
    """Clients get a 64-message queue."""
    yield from small_queue_daemon(tmp_path_factory.mktemp("big"), BIG_ANSWER_QUEUE)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """The root both clients open."""
    return make_workspace(tmp_path / "ws")


def connected_names(daemon: DaemonProc) -> list[str]:
    """Names of the connected clients, without their numeric suffix."""
    return sorted(c["name"].rsplit("-", 1)[0] for c in daemon.status()["clients"])


def test_a_client_that_stops_reading_is_dropped_and_the_others_get_everything(
    flood_daemon: DaemonProc, workspace: Path
) -> None:
    daemon = flood_daemon
    before_kib = memory_kib(daemon.pid, "VmRSS")
    with (
        WireClient(fake_socket(daemon), name="reader") as reader,
        WireClient(fake_socket(daemon), name="stalled", reading=False) as stalled,
    ):
        reader.initialize(workspace)
        stalled.initialize(workspace)
        stalled.send({"jsonrpc": "2.0", "id": "flood", "method": "fake/notifyMe", "params": {"count": FLOOD}})
        # From here on `stalled` never reads until the daemon has given up on it.
        wait_until(
            lambda: log_count(daemon, queue_full(FLOOD_QUEUE)), timeout=60, what="the stalled client to be dropped"
        )
        wait_until(lambda: connected_names(daemon) == ["reader"], timeout=10, what="only the reader to remain")

        try:
            answer = reader.result("fake/echo", {"after": "flood"}, timeout=60)
        except WireClosed:
            drops = [line for line in daemon.log_text().splitlines() if "disconnected" in line]
            raise AssertionError(f"the reading client was dropped too: {drops}") from None
        assert answer == {"after": "flood"}
        flood = [n for n in reader.notifications if n["method"] == "window/logMessage"]
        assert [n["params"]["message"] for n in flood] == [f"notify {i}" for i in range(FLOOD)]

        # The stalled client finds its connection closed once it looks, the answer to
        # its request never having been sent.
        leftovers = stalled.wait_closed(timeout=30)
        assert not [m for m in leftovers if m.get("id") == "flood"]
        assert len(leftovers) < FLOOD

    after_kib = memory_kib(daemon.pid, "VmHWM")
    assert after_kib - before_kib < MEMORY_BOUND_KIB


def test_memory_stays_bounded_when_a_stalled_client_asks_for_big_answers(
    big_answer_daemon: DaemonProc, workspace: Path
) -> None:
    """Without the queue bound the daemon would hold every answer: 300 MiB here."""
    daemon = big_answer_daemon
    answers, size = 300, 1024 * 1024
    before_kib = memory_kib(daemon.pid, "VmHWM")
    with (
        WireClient(fake_socket(daemon), name="reader") as reader,
        WireClient(fake_socket(daemon), name="greedy", reading=False) as greedy,
    ):
        reader.initialize(workspace)
        greedy.initialize(workspace)
        dropped_before = log_count(daemon, queue_full(BIG_ANSWER_QUEUE))

        def ask_for_everything() -> None:
            try:
                for i in range(answers):
                    params = {"i": i, "blob": "x" * size}
                    greedy.send_raw(frame_json({"jsonrpc": "2.0", "id": i, "method": "fake/echo", "params": params}))
            except OSError:
                pass  # dropped by the daemon half way: what this test expects

        sender = threading.Thread(target=ask_for_everything, name="greedy-sender")
        sender.start()
        sender.join(120)
        assert not sender.is_alive()
        # Measured before anything else: the peak while answers were piling up.
        peak_kib = memory_kib(daemon.pid, "VmHWM")
        assert peak_kib - before_kib < MEMORY_BOUND_KIB
        wait_until(
            lambda: log_count(daemon, queue_full(BIG_ANSWER_QUEUE)) > dropped_before,
            timeout=30,
            what="the greedy client's drop",
        )
        assert reader.result("fake/echo", {"still": "served"}) == {"still": "served"}
        wait_until(lambda: connected_names(daemon) == ["reader"], timeout=10, what="only the reader to remain")
