"""sd_notify(3) client and the event-loop-driven watchdog, without libsystemd.

The protocol is one AF_UNIX datagram of newline-separated `KEY=VALUE` lines to
the socket named by $NOTIFY_SOCKET (a path, or an abstract name written `@name`).
Everything is a no-op when the daemon was not started by systemd with
`Type=notify`, so callers never need to check.

The watchdog ping deliberately runs as a coroutine on the daemon's own event
loop: a coroutine that sleeps wakes on time only when the loop is free, so a
loop stuck in blocking code stops the pings and systemd restarts the service.
A ping from a helper thread would keep a wedged daemon alive forever.
"""

from __future__ import annotations

import logging
import os
import socket
import time
from collections.abc import Callable, Mapping, MutableMapping

import anyio
from anyio.abc import TaskStatus

logger = logging.getLogger(__name__)

# Variables that describe this process's relation to its manager; children
# (language servers) must not inherit them and talk to systemd as if they were us.
_NOTIFY_ENV = ("NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID")


def watchdog_interval(environ: Mapping[str, str] | None = None) -> float | None:
    """Seconds systemd waits for a WATCHDOG=1 ping, or None when no watchdog applies to us."""
    env = os.environ if environ is None else environ
    raw_usec = env.get("WATCHDOG_USEC")
    if not raw_usec:
        return None
    try:
        usec = int(raw_usec)
    except ValueError:
        logger.warning("ignoring malformed WATCHDOG_USEC=%r", raw_usec)
        return None
    if usec <= 0:
        return None
    raw_pid = env.get("WATCHDOG_PID")
    if raw_pid:
        # Like sd_watchdog_enabled(3): a watchdog aimed at another pid is not ours.
        try:
            pid = int(raw_pid)
        except ValueError:
            logger.warning("ignoring malformed WATCHDOG_PID=%r", raw_pid)
            return None
        if pid != os.getpid():
            return None
    return usec / 1_000_000


def _monotonic_usec() -> int:
    return time.clock_gettime_ns(time.CLOCK_MONOTONIC) // 1000


def _socket_address(raw: str) -> str | bytes | None:
    if raw.startswith("@"):
        # Abstract namespace: the kernel name starts with a NUL byte.
        return b"\0" + raw[1:].encode()
    if raw.startswith("/"):
        return raw
    logger.warning("ignoring NOTIFY_SOCKET=%r: neither a path nor an @abstract name", raw)
    return None


class Notifier:
    """Sends sd_notify state changes to systemd; every method is a no-op without NOTIFY_SOCKET."""

    def __init__(self, address: str | bytes | None, watchdog_interval: float | None = None):
        self._address = address
        self._watchdog_interval = watchdog_interval

    @classmethod
    def from_environ(cls, environ: MutableMapping[str, str] | None = None, *, unset: bool = True) -> Notifier:
        """Read NOTIFY_SOCKET and the watchdog settings; with unset, remove them from environ."""
        env = os.environ if environ is None else environ
        raw = env.get("NOTIFY_SOCKET", "")
        address = _socket_address(raw) if raw else None
        interval = watchdog_interval(env)
        if unset:
            for key in _NOTIFY_ENV:
                env.pop(key, None)
        return cls(address, interval)

    @property
    def enabled(self) -> bool:
        """True when a notification socket is configured."""
        return self._address is not None

    @property
    def watchdog_interval(self) -> float | None:
        """The systemd watchdog timeout in seconds, None when the watchdog is off."""
        return self._watchdog_interval

    def send(self, *assignments: str) -> bool:
        """Send `KEY=VALUE` lines as one datagram; True when delivered, False otherwise."""
        if self._address is None or not assignments:
            return False
        payload = "\n".join(assignments).encode()
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
            # A full receive queue must drop the message, never stall the event loop.
            sock.setblocking(False)
            try:
                sock.sendto(payload, self._address)
            except OSError as exc:
                logger.warning("sd_notify %r not delivered: %s", assignments[0], exc)
                return False
        return True

    def ready(self, status: str | None = None) -> bool:
        """Start-up (or a reload) is complete and the sockets are served."""
        return self.send("READY=1", *self._status_line(status))

    def status(self, text: str) -> bool:
        """Set the free-form status shown by `systemctl --user status`."""
        return self.send(*self._status_line(text))

    def reloading(self, status: str | None = None) -> bool:
        """A configuration reload started; follow with ready() when it is done."""
        # systemd >= 253 wants the timestamp to order RELOADING=1 against READY=1.
        return self.send("RELOADING=1", f"MONOTONIC_USEC={_monotonic_usec()}", *self._status_line(status))

    def stopping(self, status: str | None = None) -> bool:
        """Shutdown started."""
        return self.send("STOPPING=1", *self._status_line(status))

    def watchdog(self) -> bool:
        """Tell systemd the service is alive; prefer watchdog_task over calling this directly."""
        return self.send("WATCHDOG=1")

    @staticmethod
    def _status_line(text: str | None) -> tuple[str, ...]:
        if text is None:
            return ()
        # One assignment per line: an embedded newline would start a bogus assignment.
        return ("STATUS=" + " ".join(text.splitlines()),)


async def watchdog_task(
    notifier: Notifier,
    is_healthy: Callable[[], bool],
    *,
    task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
) -> None:
    """Ping WATCHDOG=1 every half interval while the event loop is responsive and healthy."""
    interval = notifier.watchdog_interval
    task_status.started()
    if not notifier.enabled or interval is None:
        logger.debug("systemd watchdog not enabled for this process")
        return
    period = interval / 2
    deadline = anyio.current_time() + period
    unhealthy = False
    while True:
        await anyio.sleep_until(deadline)
        now = anyio.current_time()
        late = now - deadline
        if late > period:
            # Woken more than a full watchdog interval after the previous wake-up:
            # the loop was blocked past systemd's deadline. Pinging now would hide
            # the stall that systemd has already judged.
            logger.warning(
                "event loop was blocked for %.1fs (watchdog %.1fs); ping skipped",
                late,
                interval,
            )
        elif not is_healthy():
            if not unhealthy:
                logger.warning("daemon reports unhealthy; withholding watchdog pings")
            unhealthy = True
        else:
            if unhealthy:
                logger.info("daemon healthy again; watchdog pings resume")
            unhealthy = False
            notifier.watchdog()
        # Schedule from now, not from the old deadline, so a stall does not
        # cause a burst of catch-up pings.
        deadline = now + period
