"""What the search needs from the daemon's language servers, and one query's use of them.

The daemon implements LspGateway over its running instances (documents opened as
needed, its response cache, breakers and timeouts); the search never starts, stops
or talks to a server any other way. Tests use a fake, plus a small stdio one over real pyright.

LspCalls wraps the gateway for one query: the in-flight cap, per-request timeouts, and
a record of what failed. Nothing there raises because of a language server: a failed
request answers None and leaves a note that becomes a warning. The answer is
`degraded: true` only when a server that should answer is really unavailable: it cannot
be started or reached, or it answered none of the requests sent to it. A language no
server is configured for (NoServer), a few failed requests or an expansion budget that
ran out while the server was answering are warnings, not degradation.
"""

from __future__ import annotations

import contextlib
import logging
from collections import Counter
from collections.abc import Iterator, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import anyio

from lensmux.graph.search.errors import METHOD_NOT_FOUND, GatewayError

log = logging.getLogger(__name__)

# The failures of the requests made inside LspCalls.watching() (child tasks included).
_FAILURES: ContextVar[list[str] | None] = ContextVar("lensmux_search_failures", default=None)

__all__ = ["GatewayError", "LspCalls", "LspGateway", "NoServer"]


class NoServer(str):
    """An unavailable_reason meaning that no server is configured for the language at all.

    Its symbols are ranked without expansion as always; nothing is wrong with a server,
    so the answer is not degraded.
    """

    __slots__ = ()


class LspGateway(Protocol):
    """Requests to the language server that covers (root, language)."""

    def unavailable_reason(self, root: Path, language: str) -> str | None:
        """None when a server may be asked; else why not ("no server for rust", "clangd circuit open ...")."""
        ...

    async def capabilities(self, root: Path, language: str) -> Mapping[str, Any]:
        """The server's ServerCapabilities (starting it if needed); GatewayError if it cannot run."""
        ...

    async def request(
        self, root: Path, language: str, method: str, params: Mapping[str, Any], *, timeout: float
    ) -> Any:
        """Send one request and return its result; GatewayError on error or timeout.

        The caller may cancel it (its expansion budget ran out); the gateway then
        cancels the request at the server, as it would for a client.
        """
        ...

    def answers_settled(self, root: Path, language: str) -> bool:
        """Whether the server's cross-file answers are complete (it has discovered the workspace)."""
        ...


@dataclass(slots=True)
class _LanguageLog:
    unavailable: str | None = None
    no_server: bool = False
    sent: int = 0
    answered: int = 0
    failed: int = 0
    reasons: Counter[str] = field(default_factory=Counter)


class LspCalls:
    """The gateway as one search sees it."""

    def __init__(self, gateway: LspGateway, root: Path, *, max_in_flight: int, timeout: float) -> None:
        self.gateway = gateway
        self.root = root
        self.timeout = timeout
        self.limiter = anyio.CapacityLimiter(max(1, max_in_flight))
        self._logs: dict[str, _LanguageLog] = {}
        self._caps: dict[str, Mapping[str, Any] | None] = {}
        self._caps_locks: dict[str, anyio.Lock] = {}
        self._unsupported: set[tuple[str, str]] = set()

    def _log(self, language: str) -> _LanguageLog:
        return self._logs.setdefault(language, _LanguageLog())

    def available(self, language: str) -> bool:
        """Whether the language's server may be asked at all (remembered for this query)."""
        entry = self._log(language)
        if entry.unavailable is None:
            try:
                reason = self.gateway.unavailable_reason(self.root, language)
            except Exception as exc:  # a gateway bug must not fail the search
                log.warning("unavailable_reason(%s) raised", language, exc_info=True)
                reason = f"gateway error: {exc}"
            entry.unavailable = reason or ""
            entry.no_server = isinstance(reason, NoServer)
        return not entry.unavailable

    async def capabilities(self, language: str) -> Mapping[str, Any] | None:
        """The server's capabilities, or None when it cannot be reached."""
        if not self.available(language):
            return None
        async with self._caps_locks.setdefault(language, anyio.Lock()):
            if language not in self._caps:
                caps: Mapping[str, Any] | None = None
                try:
                    with anyio.fail_after(self.timeout):
                        caps = await self.gateway.capabilities(self.root, language)
                except TimeoutError:
                    self._note(language, f"server did not start within {self.timeout:g} s")
                except GatewayError as exc:
                    self._note(language, exc.reason)
                except Exception as exc:  # a gateway bug must not fail the search
                    log.warning("capabilities(%s) raised", language, exc_info=True)
                    self._note(language, f"gateway error: {exc}")
                self._caps[language] = caps if isinstance(caps, Mapping) else None
            return self._caps[language]

    def unsupported(self, language: str, method: str) -> bool:
        """Whether the server answered `method not found` to method during this query."""
        return (language, method) in self._unsupported

    async def call(self, language: str, method: str, params: Mapping[str, Any]) -> Any:
        """The request's result, or None when it failed (noted) or the server lacks the method."""
        if not self.available(language) or self.unsupported(language, method):
            return None
        entry = self._log(language)
        async with self.limiter:
            entry.sent += 1
            try:
                with anyio.fail_after(self.timeout):
                    result = await self.gateway.request(self.root, language, method, params, timeout=self.timeout)
                entry.answered += 1
                return result
            except TimeoutError:
                self._fail(language, f"{method} timed out after {self.timeout:g} s")
            except GatewayError as exc:
                if exc.code == METHOD_NOT_FOUND:
                    self._unsupported.add((language, method))
                    entry.sent -= 1  # an answer about capabilities, not a failure
                else:
                    self._fail(language, f"{method}: {exc.reason}")
            except Exception as exc:  # a gateway bug must not fail the search
                log.warning("%s request %s raised", language, method, exc_info=True)
                self._fail(language, f"{method}: gateway error: {exc}")
        return None

    def settled(self, language: str) -> bool:
        """Whether answers of the language's server may be remembered (see LspGateway.answers_settled)."""
        try:
            return self.available(language) and self.gateway.answers_settled(self.root, language)
        except Exception:  # a gateway bug must not fail the search
            log.warning("answers_settled(%s) raised", language, exc_info=True)
            return False

    @staticmethod
    @contextlib.contextmanager
    def watching() -> Iterator[list[str]]:
        """Collect the failures of the requests made inside the block, its child tasks included."""
        sink: list[str] = []
        token = _FAILURES.set(sink)
        try:
            yield sink
        finally:
            _FAILURES.reset(token)

    def _fail(self, language: str, reason: str) -> None:
        sink = _FAILURES.get()
        if sink is not None:
            sink.append(reason)
        entry = self._log(language)
        entry.failed += 1
        entry.reasons[reason] += 1

    def _note(self, language: str, reason: str) -> None:
        entry = self._log(language)
        entry.unavailable = reason

    @property
    def degraded(self) -> bool:
        """Whether a server that should answer was unavailable, or answered none of its requests."""
        return any((e.unavailable and not e.no_server) or (e.sent > 0 and e.answered == 0) for e in self._logs.values())

    @property
    def requests_sent(self) -> int:
        """Requests that reached the gateway."""
        return sum(e.sent for e in self._logs.values())

    def warnings(self) -> list[str]:
        """One line per language that had trouble, in language order."""
        out: list[str] = []
        for language in sorted(self._logs):
            entry = self._logs[language]
            if entry.no_server:
                out.append(f"{language}: {entry.unavailable}; its symbols were ranked without a language server")
            elif entry.unavailable:
                out.append(f"{language}: {entry.unavailable}; its symbols were not expanded")
            elif entry.failed:
                worst = ", ".join(f"{reason} (x{n})" if n > 1 else reason for reason, n in entry.reasons.most_common(3))
                out.append(f"{language}: {entry.failed} of {entry.sent} language-server requests failed: {worst}")
            elif entry.sent and not entry.answered:
                out.append(f"{language}: none of {entry.sent} language-server requests was answered in time")
        return out
