"""Circuit breaker per instance: fail fast while a server is sick, probe to recover.

closed ──(N consecutive failures, or too many restarts in a window)──▶ open
open ──(cooldown elapsed)──▶ half-open: one probe request goes through
half-open ──probe succeeds──▶ closed;  ──probe fails──▶ open again
"""

from __future__ import annotations

import enum
import logging
import time
from collections import deque
from dataclasses import dataclass, field

from lensmux.daemon.config import BreakerConfig

log = logging.getLogger(__name__)


class BreakerState(enum.Enum):
    """The three breaker states."""

    CLOSED = "closed"
    OPEN = "open"
    HALF_OPEN = "half-open"


@dataclass(slots=True)
class Transition:
    """One state change, kept for `lensmux status`."""

    at: float
    state: str
    reason: str


@dataclass
class CircuitBreaker:
    """Counts failures of one instance and decides whether requests may pass."""

    name: str
    config: BreakerConfig
    clock: object = field(default=time.monotonic, repr=False)
    state: BreakerState = BreakerState.CLOSED
    consecutive_failures: int = 0
    reason: str = ""
    opened_at: float = 0.0
    probe_in_flight: bool = False
    transitions: deque[Transition] = field(default_factory=lambda: deque(maxlen=20))
    _restarts: deque[float] = field(default_factory=deque)

    def _now(self) -> float:
        now: float = self.clock()  # type: ignore[operator]
        return now

    @property
    def retry_at(self) -> float:
        """Monotonic time at which an open breaker lets a probe through."""
        return self.opened_at + self.config.cooldown

    def allow(self) -> bool:
        """Whether a request may go to the server now (claims the probe when half-open)."""
        if self.state is BreakerState.OPEN and self._now() >= self.retry_at:
            self._move(BreakerState.HALF_OPEN, "cooldown elapsed")
        if self.state is BreakerState.CLOSED:
            return True
        if self.state is BreakerState.HALF_OPEN and not self.probe_in_flight:
            self.probe_in_flight = True
            return True
        return False

    def ready_for_restart(self) -> bool:
        """Whether the supervisor may start the server again (not while open)."""
        if self.state is BreakerState.OPEN and self._now() >= self.retry_at:
            self._move(BreakerState.HALF_OPEN, "cooldown elapsed")
        return self.state is not BreakerState.OPEN

    def record_success(self) -> None:
        """A request was answered."""
        self.consecutive_failures = 0
        if self.state is BreakerState.HALF_OPEN:
            self.probe_in_flight = False
            self._move(BreakerState.CLOSED, "probe succeeded")

    def record_failure(self, reason: str) -> None:
        """A crash, timeout or transport error."""
        self.consecutive_failures += 1
        if self.state is BreakerState.HALF_OPEN:
            self.probe_in_flight = False
            self._open(f"probe failed: {reason}")
        elif self.state is BreakerState.CLOSED and self.consecutive_failures >= self.config.failure_threshold:
            self._open(f"{self.consecutive_failures} consecutive failures, last: {reason}")

    def record_restart(self, reason: str) -> None:
        """The server process ended and will be restarted."""
        now = self._now()
        self._restarts.append(now)
        while self._restarts and now - self._restarts[0] > self.config.restart_window:
            self._restarts.popleft()
        if len(self._restarts) >= self.config.restart_limit and self.state is not BreakerState.OPEN:
            self._open(f"{len(self._restarts)} restarts within {self.config.restart_window:g}s, last: {reason}")
        else:
            self.record_failure(reason)

    def _open(self, reason: str) -> None:
        self.opened_at = self._now()
        self._move(BreakerState.OPEN, reason)

    def _move(self, state: BreakerState, reason: str) -> None:
        if state is self.state:
            return
        self.state = state
        self.reason = reason
        self.transitions.append(Transition(time.time(), state.value, reason))
        level = logging.WARNING if state is BreakerState.OPEN else logging.INFO
        log.log(level, "%s: circuit %s (%s)", self.name, state.value, reason)

    def rejection(self) -> str:
        """The error text for a request refused while open."""
        wait = max(0.0, self.retry_at - self._now())
        until = time.strftime("%H:%M:%S", time.localtime(time.time() + wait))
        return f"{self.name}: circuit {self.state.value} ({self.reason}); retry after {until} (in {wait:.1f}s)"

    def status(self) -> dict[str, object]:
        """What `lensmux status` shows of the breaker."""
        return {
            "state": self.state.value,
            "reason": self.reason,
            "consecutive_failures": self.consecutive_failures,
            "retry_in_s": round(max(0.0, self.retry_at - self._now()), 1) if self.state is BreakerState.OPEN else None,
            "transitions": [{"at": t.at, "state": t.state, "reason": t.reason} for t in self.transitions],
        }
