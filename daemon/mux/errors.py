"""What can go wrong with an instance, as its callers see it.

InstanceError
├── ServerUnavailable: not running, crashed, missing, stopping
│   └── CircuitOpen: the breaker is open; fail fast until its probe succeeds
├── RequestTimedOut: no answer within the method's timeout
└── ServerRequestFailed: the server answered a daemon request with an error
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple


class InstanceKey(NamedTuple):
    """What makes two clients share a server process."""

    server: str
    fingerprint: str
    root: Path
    # False: the server runs in `root` with no workspace folder at all, as it would for a client
    # that named its directory only where the server does not look (rootUri, for pyright).
    workspace: bool = True
    # The language the server writes its messages in, when a client's `locale` asks for another
    # than the default instance's (Adapter.own_language); None: the default, started with no `locale`.
    language: str | None = None


class InstanceError(Exception):
    """Base of instance failures reported to callers."""


class ServerUnavailable(InstanceError):
    """The server is not running and cannot answer (crashed, missing, stopping)."""


class RequestTimedOut(InstanceError):
    """The server did not answer within the method's timeout."""


class CircuitOpen(ServerUnavailable):
    """The instance's breaker is open: requests fail fast until its probe succeeds."""


class ServerRequestFailed(InstanceError):
    """The server answered one of the daemon's own requests with an error."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


@dataclass(slots=True)
class ExitRecord:
    """Why the server process last ended."""

    at: float
    reason: str
