"""A session's transcript, normalised modulo what the spec leaves free.

Free: request ids, progress tokens, timing, the order of notifications between requests, the
temporary directory a run works in, server pids. Everything else a client can see is kept.
Entries are grouped by *aspect* (one feature of the protocol) so that each aspect is compared,
and marked as a known failure, on its own.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from support.lspclient import path_uri

# Members whose values a server picks freely per run.
FREE_KEYS = frozenset({"resultId", "previousResultId", "token", "workDoneToken", "partialResultToken"})
PID = re.compile(r"\b(pid|process)[ =:]+\d+", re.IGNORECASE)
# file:line:col inside message text: the column is counted in the negotiated encoding.
FILE_LINE_COL = re.compile(r"(\w\.\w+:\d+):\d+")


@dataclass
class Transcript:
    """What one client saw in one session, as aspect -> ordered list of (label, value)."""

    base: Path
    aspects: dict[str, list[tuple[str, Any]]] = field(default_factory=dict)
    messages: list[tuple[str, Any]] = field(default_factory=list)
    # Observations kept for the report but never compared (they depend on timing).
    notes: dict[str, Any] = field(default_factory=dict)

    def record(self, aspect: str, label: str, value: Any) -> None:
        """Add one normalised observation under aspect."""
        self.aspects.setdefault(aspect, []).append((label, self.normalise(value)))

    def aspect(self, name: str) -> list[tuple[str, Any]]:
        """The observations of one aspect (empty if the session had none)."""
        return self.aspects.get(name, [])

    def normalise(self, value: Any) -> Any:
        """value with run-specific paths replaced and free members blanked; lists of notifications sorted."""
        if isinstance(value, str):
            text = value.replace(path_uri(self.base), "$BASE_URI").replace(str(self.base.resolve()), "$BASE")
            text = PID.sub(r"\1 $PID", text.replace(str(self.base), "$BASE"))
            return FILE_LINE_COL.sub(r"\1:$COL", text)
        if isinstance(value, list):
            return [self.normalise(item) for item in value]
        if isinstance(value, dict):
            return {self.normalise(k): ("$FREE" if k in FREE_KEYS else self.normalise(v)) for k, v in value.items()}
        return value

    def keep_messages(self, sent: list[dict[str, Any]], received: list[dict[str, Any]]) -> None:
        """Keep every message of the session (ids blanked) for the failure report."""
        for direction, log in (("->", sent), ("<-", received)):
            for message in log:
                shown = {k: v for k, v in message.items() if k not in ("id", "jsonrpc")}
                self.messages.append((direction, self.normalise(shown)))

    def dump(self) -> str:
        """The whole normalised message log, one message a line (for assertion messages)."""
        return "\n".join(f"{d} {json.dumps(m, ensure_ascii=False)[:400]}" for d, m in self.messages)


def sorted_unique(items: list[Any]) -> list[Any]:
    """Items as a sorted list without duplicates (order and repetition the spec leaves free)."""
    keyed = {json.dumps(item, sort_keys=True, ensure_ascii=False): item for item in items}
    return [keyed[k] for k in sorted(keyed)]


def outcome(result: Any, error: Exception | None) -> Any:
    """A request's answer as compared: the result, or the error's code."""
    if error is not None:
        code = getattr(error, "code", None)
        return {"error": code if code is not None else type(error).__name__}
    return {"result": result}
