"""What a client is told besides answers: log and show messages, progress, its start-up.

A server alone tells its one client how it starts ("Found 45 source files"), what it logs while
it works and how its analysis progresses; agents wait for exactly those lines before their first
request. These are recorded as their own aspects (log_messages, progress_messages, startup) so
that each is compared, and marked as a known failure, on its own. Free in them: durations,
progress tokens and percentages (how far a server got between two reports is timing).
"""

from __future__ import annotations

import re
from typing import Any

from support.lspclient import LspClient

from conformance.transcript import Transcript, sorted_unique

LOG = "window/logMessage"
SHOW = "window/showMessage"
PROGRESS = "$/progress"
# pyright's own progress, sent instead of $/progress to a client without window.workDoneProgress.
PYRIGHT_PROGRESS = ("pyright/beginProgress", "pyright/reportProgress", "pyright/endProgress")
TOLD = frozenset({LOG, SHOW, PROGRESS, *PYRIGHT_PROGRESS})

# "(123ms)", "in 1.5 s", "took 40 ms": how long something took is timing, not content.
DURATION = re.compile(r"\b\d+(?:\.\d+)?\s?(?:ms|sec|seconds|s)\b")
# In a progress report, how far the server got ("12 files to analyze") is timing too.
COUNT = re.compile(r"\d+")
PLURAL = re.compile(r"\$N (\w+?)s\b")
# pyright's end of enumeration, in whichever words.
ENUMERATED = re.compile(r"^(Found \d+ source files?|No source files found)$")
# pyright's log line for an operation that took longer than its threshold (2 s by default): "[FG]
# Long operation: analyzing: file:///.../main.py (2143ms)". Whether it is said at all is timing,
# like the duration inside it: a shared pyright doing ten clients' work on a loaded machine crosses
# the threshold where a pyright of its own at another moment does not, and the reverse.
LONG_OPERATION = re.compile(r"^(\[[^\]]*\] )?Long operation: ")


def normalise_text(text: str) -> str:
    """A message's text with durations blanked (paths and pids are the transcript's to blank)."""
    return DURATION.sub("$DURATION", text)


def _progress_text(value: Any) -> Any:
    if not isinstance(value, str):
        return value
    # "1 file to analyze" and "2 files to analyze" are the same report.
    return PLURAL.sub(r"$N \1", COUNT.sub("$N", value))


def told_item(method: str, params: Any) -> Any:
    """One log, show or progress notification as compared."""
    if method in (LOG, SHOW):
        return [method, params.get("type"), normalise_text(str(params.get("message", "")))]
    if method == PROGRESS:
        value = params.get("value") if isinstance(params, dict) else None
        value = value if isinstance(value, dict) else {}
        return [method, {k: _progress_text(v) for k, v in value.items() if k != "percentage"}]
    if isinstance(params, dict):
        return [method, {k: _progress_text(v) for k, v in params.items() if k != "percentage"}]
    if isinstance(params, list):
        # pyright's own progress notifications carry positional params: ["3 files to analyze"].
        return [method, [_progress_text(v) for v in params]]
    return [method, _progress_text(params)]


def _is_analysis(items: list[Any]) -> bool:
    """A token's reports are pyright's analysis of open files: it begins untitled."""
    return bool(items) and items[0].get("kind") == "begin" and not items[0].get("title")


def _bracketed(kinds: list[str]) -> bool:
    """Passes of begin, reports, end, one after another (the last may still be running)."""
    running = False
    for kind in kinds:
        if (kind == "begin" and running) or (kind in ("report", "end") and not running):
            return False
        running = kind != "end"
    return True


def _declares_window_progress(client: LspClient) -> bool:
    initialize = next((m for m in client.sent_messages if m.get("method") == "initialize"), {})
    window = (initialize.get("params") or {}).get("capabilities", {}).get("window")
    return isinstance(window, dict) and window.get("workDoneProgress") is True


def collapse(items: list[Any]) -> list[Any]:
    """items without consecutive repeats (how many reports a server sends in between is timing)."""
    return [item for i, item in enumerate(items) if i == 0 or item != items[i - 1]]


def is_timed(method: str, params: Any) -> bool:
    """A log line a server writes only because something took long (see LONG_OPERATION)."""
    if method != LOG or not isinstance(params, dict):
        return False
    return bool(LONG_OPERATION.match(str(params.get("message", ""))))


def told_sequence(notifications: list[tuple[str, Any]]) -> list[Any]:
    """The log, show and progress notifications among `notifications`, in the order they came."""
    return [
        told_item(method, params or {})
        for method, params in notifications
        if method in TOLD and not is_timed(method, params)
    ]


def one_enumeration_order(messages: list[Any]) -> list[Any]:
    """Log lines of a client that sent `initialized` twice, pyright's two orders made one.

    pyright loads its configuration at each `initialized` and enumerates the workspace 250 ms
    after the last client activity: a pyright of its own logs "configuration, configuration,
    Found N" when the second `initialized` comes before the enumeration, and "configuration,
    Found N, configuration, Found N" when it comes after (both seen from pyright alone for the
    same session). Which one is timing, so an enumeration line that the same line follows
    later is dropped, on both sides of the comparison.
    """
    enumerations = [item[2] for item in messages if ENUMERATED.match(str(item[2]))]
    kept: list[Any] = []
    for item in messages:
        if ENUMERATED.match(str(item[2])):
            enumerations.pop(0)
            if item[2] in enumerations:
                continue
        kept.append(item)
    return kept


def record_told(transcript: Transcript, client: LspClient, *, initialized_twice: bool = False) -> None:
    """The log and show messages and the progress the client was told over its whole session."""
    notes = client.notifications
    messages = [told_item(m, p) for m, p in notes if m in (LOG, SHOW) and not is_timed(m, p)]
    if initialized_twice:
        messages = one_enumeration_order(messages)
    transcript.record("log_messages", "log and show messages, in order", messages)
    # Progress per token (tokens are free, and reports of two tokens may interleave as they like).
    # Compared as the distinct kinds of progress told: how often a server reports the same work
    # (once per try of a request asked again, once per analysis pass) is timing.
    by_token: dict[str, list[Any]] = {}
    for method, params in notes:
        if method == PROGRESS and isinstance(params, dict):
            by_token.setdefault(repr(params.get("token")), []).append(told_item(method, params)[1])
    # pyright reports its analysis of the open files only when a pass outlasts one time slice: a
    # pyright alone reports it in some runs and not in others (seen for editors and agents alike),
    # so whether it comes is timing. What is compared is how it is told when it comes: in passes
    # of begin, reports and end, as $/progress to a client that declared window.workDoneProgress
    # and as pyright/*Progress to one that did not.
    analysis = [items for items in by_token.values() if _is_analysis(items)]
    reports = sorted_unique([collapse(items) for items in by_token.values() if not _is_analysis(items)])
    transcript.record("progress_messages", "$/progress: the distinct reports of one token", reports)
    own = [str(m).removeprefix("pyright/").removesuffix("Progress") for m, _ in notes if m in PYRIGHT_PROGRESS]
    in_passes = all(_bracketed([str(i.get("kind")) for i in items]) for items in analysis) and _bracketed(own)
    transcript.record("progress_messages", "analysis progress, when told, comes in passes", in_passes)
    wrong_form = own if _declares_window_progress(client) else analysis
    transcript.record(
        "progress_messages", "analysis progress, when told, in the form the client declared", not wrong_form
    )


def before_first_answer(client: LspClient, first_request_id: Any) -> list[Any]:
    """What the client was told (log, show, progress) before the answer to `first_request_id`."""
    told: list[Any] = []
    for message in client.messages:
        if message.get("id") == first_request_id and "method" not in message:
            break
        method = message.get("method")
        if method in TOLD and "id" not in message and not is_timed(method, message.get("params")):
            told.append(told_item(method, message.get("params") or {}))
    return told
