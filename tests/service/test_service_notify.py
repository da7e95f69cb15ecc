"""sd_notify messages and the loop-driven watchdog, seen from a real NOTIFY_SOCKET listener."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from lensmux.daemon.service.notify import Notifier, watchdog_interval

# Commands on stdin drive the daemon-like program; every phase boundary is a
# STATUS= message so the test orders events by the datagrams themselves.
PROGRAM = """
import os, sys, time
import anyio
from lensmux.daemon.service.logsetup import configure_logging
from lensmux.daemon.service.notify import Notifier, watchdog_task

configure_logging("info")
notifier = Notifier.from_environ()
print("inherited:" + ",".join(k for k in ("NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID")
                              if k in os.environ), flush=True)
healthy = True
unhealthy_checks = 0
checked = anyio.Event()

def is_healthy():
    global unhealthy_checks
    if not healthy:
        unhealthy_checks += 1
        if unhealthy_checks >= 3:
            checked.set()
    return healthy

async def main():
    global healthy
    async with anyio.create_task_group() as tg:
        await tg.start(watchdog_task, notifier, is_healthy)
        notifier.ready("serving")
        async for line in anyio.wrap_file(sys.stdin):
            command, *args = line.split()
            if command == "reload":
                notifier.reloading("reloading")
                notifier.ready("reloaded")
            elif command == "block":
                notifier.status("blocking")
                time.sleep(float(args[0]))
                notifier.status("unblocked")
            elif command == "unhealthy":
                healthy = False
                notifier.status("unhealthy")
                await checked.wait()
                healthy = True
                notifier.status("healthy")
            elif command == "stop":
                notifier.stopping()
                break
        tg.cancel_scope.cancel()

anyio.run(main)
"""
WATCHDOG_USEC = 100_000  # 0.1 s: pings every 0.05 s
MAX_AWAITED = 400


@pytest.fixture
def sock_dir() -> Iterator[Path]:
    """A short directory: sun_path holds only 108 bytes, pytest's tmp_path can be longer."""
    path = Path(tempfile.mkdtemp(prefix="lmx-", dir="/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


class NotifyListener:
    """The systemd side: a datagram socket that records every notification in order."""

    def __init__(self, address: str | bytes) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(address)
        self.sock.settimeout(60)  # a hang guard, not a timing assertion
        self.messages: list[list[str]] = []

    def until(self, done: Callable[[list[str]], bool]) -> list[list[str]]:
        """Receive until a message satisfies done; return the messages received meanwhile."""
        start = len(self.messages)
        # Pings keep arriving even when the awaited message never does; a cap on
        # their number turns that into a failure instead of a hang.
        while len(self.messages) - start < MAX_AWAITED:
            message = self.sock.recv(4096).decode().split("\n")
            self.messages.append(message)
            if done(message):
                return self.messages[start:]
        pytest.fail(f"awaited notification not among {MAX_AWAITED} received")

    def pings(self, count: int) -> list[list[str]]:
        """Receive until count more WATCHDOG=1 pings arrived."""
        seen = 0

        def counted(message: list[str]) -> bool:
            nonlocal seen
            seen += message == ["WATCHDOG=1"]
            return seen >= count

        return self.until(counted)


def _has(line: str) -> Callable[[list[str]], bool]:
    return lambda message: line in message


@pytest.fixture
def listener(sock_dir: Path) -> Iterator[NotifyListener]:
    recorder = NotifyListener(str(sock_dir / "notify.sock"))
    yield recorder
    recorder.sock.close()


@pytest.fixture
def notifying_program(sock_dir: Path, listener: NotifyListener) -> Iterator[subprocess.Popen[str]]:
    env = {
        **os.environ,
        "NOTIFY_SOCKET": str(sock_dir / "notify.sock"),
        "WATCHDOG_USEC": str(WATCHDOG_USEC),
    }
    # exec keeps the shell's pid, so WATCHDOG_PID names the python process as systemd would.
    argv = ["sh", "-c", 'WATCHDOG_PID=$$ exec "$@"', "sh", sys.executable, "-c", PROGRAM]
    proc = subprocess.Popen(
        argv,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    yield proc
    if proc.poll() is None:
        proc.kill()
    proc.communicate(timeout=60)


def _command(proc: subprocess.Popen[str], line: str) -> None:
    assert proc.stdin is not None
    proc.stdin.write(line + "\n")
    proc.stdin.flush()


def _watchdog_pings(messages: list[list[str]]) -> int:
    return sum(message == ["WATCHDOG=1"] for message in messages)


def test_lifecycle_ready_watchdog_reload_stopping(
    notifying_program: subprocess.Popen[str], listener: NotifyListener
) -> None:
    assert listener.until(_has("READY=1"))[-1] == ["READY=1", "STATUS=serving"]
    assert notifying_program.stdout is not None
    assert notifying_program.stdout.readline() == "inherited:\n"
    listener.pings(3)

    _command(notifying_program, "reload")
    reloading = listener.until(_has("RELOADING=1"))[-1]
    stamp = int(reloading[1].removeprefix("MONOTONIC_USEC="))
    assert 0 < stamp <= time.clock_gettime_ns(time.CLOCK_MONOTONIC) // 1000
    after = listener.until(lambda m: m != ["WATCHDOG=1"])[-1]
    assert after == ["READY=1", "STATUS=reloaded"]
    listener.pings(2)

    _command(notifying_program, "stop")
    listener.until(_has("STOPPING=1"))
    assert notifying_program.wait(timeout=60) == 0


def test_blocked_event_loop_sends_no_pings(notifying_program: subprocess.Popen[str], listener: NotifyListener) -> None:
    listener.until(_has("READY=1"))
    listener.pings(3)

    # Blocking for ten watchdog intervals: a ping from anywhere but the loop would land here.
    _command(notifying_program, "block 1.0")
    listener.until(_has("STATUS=blocking"))
    during = listener.until(_has("STATUS=unblocked"))
    assert _watchdog_pings(during) == 0

    listener.pings(3)  # the loop is free again, so pings resume
    _command(notifying_program, "stop")
    listener.until(_has("STOPPING=1"))
    _, stderr = notifying_program.communicate(timeout=60)
    assert "ping skipped" in stderr


def test_unhealthy_daemon_withholds_pings(notifying_program: subprocess.Popen[str], listener: NotifyListener) -> None:
    listener.until(_has("READY=1"))
    listener.pings(2)

    _command(notifying_program, "unhealthy")
    listener.until(_has("STATUS=unhealthy"))
    during = listener.until(_has("STATUS=healthy"))
    assert _watchdog_pings(during) == 0

    listener.pings(2)
    _command(notifying_program, "stop")
    listener.until(_has("STOPPING=1"))


def test_abstract_notify_socket() -> None:
    name = f"lensmux-test-{os.getpid()}-{time.monotonic_ns()}"
    recorder = NotifyListener(b"\0" + name.encode())
    with recorder.sock:
        notifier = Notifier.from_environ({"NOTIFY_SOCKET": "@" + name})
        assert notifier.status("line one\nline two")
        assert recorder.until(lambda m: True) == [["STATUS=line one line two"]]


def test_without_notify_socket_everything_is_a_no_op() -> None:
    notifier = Notifier.from_environ({})
    assert not notifier.enabled
    assert not notifier.ready()
    assert not notifier.watchdog()


def test_undeliverable_notification_is_logged_not_raised(sock_dir: Path, caplog: pytest.LogCaptureFixture) -> None:
    notifier = Notifier.from_environ({"NOTIFY_SOCKET": str(sock_dir / "absent.sock")})
    assert not notifier.ready()
    assert "not delivered" in caplog.text


def test_from_environ_removes_what_children_must_not_inherit(sock_dir: Path) -> None:
    env = {"NOTIFY_SOCKET": str(sock_dir / "n.sock"), "WATCHDOG_USEC": "30000000", "HOME": "/x"}
    notifier = Notifier.from_environ(env)
    assert env == {"HOME": "/x"}
    assert notifier.watchdog_interval == 30.0


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({"WATCHDOG_USEC": "30000000"}, 30.0),
        ({"WATCHDOG_USEC": "30000000", "WATCHDOG_PID": str(os.getpid())}, 30.0),
        ({"WATCHDOG_USEC": "30000000", "WATCHDOG_PID": str(os.getpid() + 1)}, None),
        ({"WATCHDOG_USEC": "0"}, None),
        ({"WATCHDOG_USEC": "soon"}, None),
        ({}, None),
    ],
)
def test_watchdog_interval_applies_only_to_this_process(env: dict[str, str], expected: float | None) -> None:
    assert watchdog_interval(env) == expected
