"""What clangd alone answers a client from its index: the files that client opened there.

Without a background index (no compile_commands.json), clangd answers Find References
and incoming calls from its dynamic index: the AST of every file opened at that
clangd since it started, closed ones included (clangd never removes a file from it).
A clangd shared by several clients therefore answers one client with locations in
files only others (or the daemon's searches) opened. Such a location came from that
open and from nothing else, so it is dropped; the rest keeps clangd's order, which
is the order clangd alone gives (the asked file's own references from its AST, then
the index's, sorted by URI and range).

With a background index, every file of the compilation database is covered and the
locations are the same whoever opened what; only their order depends on it: the
files in the dynamic index come first, then the background index's. That order is
rebuilt for the client's own opens.

Measured with clangd 22 (docs/sharing.md, "Cross-file answers and open files").
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

REFERENCES = "textDocument/references"
INCOMING_CALLS = "callHierarchy/incomingCalls"
# The answers this module reshapes; any other answer passes unchanged.
SCOPED_METHODS = frozenset({REFERENCES, INCOMING_CALLS})

# A predicate over file URIs: "this file was opened at the server by ...".
Opened = Callable[[str], bool]


def references_for(value: Any, asked: Opened, mine: Opened, at_server: Opened, *, background: bool) -> list[Any] | None:
    """A references answer as clangd alone answers the client that opened `mine` (None: unchanged).

    `asked` is true of the file the request named (its references come first, from its
    AST); `at_server` of every file opened at this clangd, by anyone; `background`: a
    background index exists.
    """
    if not isinstance(value, list) or not all(_location(item) for item in value):
        return None
    head = 0
    while head < len(value) and asked(value[head]["uri"]):
        head += 1
    rest = value[head:]
    if not background:
        kept = [loc for loc in rest if mine(loc["uri"]) or not at_server(loc["uri"])]
        return value[:head] + kept if len(kept) != len(rest) else None
    # The shape clangd gives with a background index: the dynamic index's files, sorted,
    # then the background index's, sorted. Anything else (a virtual method's overrides)
    # is left as it is.
    dynamic = [loc for loc in rest if at_server(loc["uri"])]
    other = [loc for loc in rest if not at_server(loc["uri"])]
    if rest != sorted(dynamic, key=_order) + sorted(other, key=_order):
        return None
    own = sorted((loc for loc in rest if mine(loc["uri"])), key=_order)
    others = sorted((loc for loc in rest if not mine(loc["uri"])), key=_order)
    reordered = value[:head] + own + others
    return reordered if reordered != value else None


def incoming_calls_for(value: Any, mine: Opened, at_server: Opened, *, background: bool) -> list[Any] | None:
    """An incomingCalls answer as clangd alone answers that client (None: unchanged).

    Each call comes from the index entry of the caller's file (`from.uri`, where the
    call sites are); clangd sorts them by the caller's name, an order dropping keeps.
    """
    if background or not isinstance(value, list):
        return None
    kept = [call for call in value if not _from_others(call, mine, at_server)]
    return kept if len(kept) != len(value) else None


def _from_others(call: Any, mine: Opened, at_server: Opened) -> bool:
    caller = call.get("from") if isinstance(call, dict) else None
    uri = caller.get("uri") if isinstance(caller, dict) else None
    return isinstance(uri, str) and at_server(uri) and not mine(uri)


def _location(item: Any) -> bool:
    return isinstance(item, dict) and isinstance(item.get("uri"), str) and isinstance(item.get("range"), dict)


def _order(loc: dict[str, Any]) -> tuple[str, int, int, int, int]:
    """clangd's order of index references: by URI, then start, then end."""
    rng = loc["range"]
    start, end = rng.get("start") or {}, rng.get("end") or {}
    return (
        loc["uri"],
        int(start.get("line", 0)),
        int(start.get("character", 0)),
        int(end.get("line", 0)),
        int(end.get("character", 0)),
    )
