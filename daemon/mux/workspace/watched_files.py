"""File events for a server that registered `workspace/didChangeWatchedFiles` when no client watches.

A server that asks to be told of file changes relies on it (pyright finds new
modules that way); a client that cannot register watchers never sends them.
The daemon already watches every root (diskwatch.py), so it sends the server
the events its registrations match, unless a connected client holds that
registration and sends them itself (they would arrive twice).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lensmux.daemon.mux.errors import ServerUnavailable
from lensmux.daemon.mux.workspace import registrations
from lensmux.daemon.paths import uri_to_path

if TYPE_CHECKING:
    from lensmux.daemon.mux.instance import Instance

log = logging.getLogger(__name__)

# watchfiles' Change values equal the LSP's FileChangeType (1 created, 2 changed, 3 deleted);
# a watcher's `kind` is a bit set of them (1, 2, 4), all by default.
_KIND_BIT = {1: 1, 2: 2, 3: 4}
_ALL_KINDS = 7


@lru_cache(maxsize=256)
def glob_regex(pattern: str) -> re.Pattern[str]:
    """The regex of an LSP glob pattern (`*`, `?`, `**`, `{a,b}`, `[...]`)."""
    out, i, depth = [], 0, 0
    while i < len(pattern):
        ch = pattern[i]
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
            continue
        if pattern.startswith("**", i):
            out.append(".*")
            i += 2
            continue
        if ch == "*":
            out.append("[^/]*")
        elif ch == "?":
            out.append("[^/]")
        elif ch == "{":
            out.append("(?:")
            depth += 1
        elif ch == "}" and depth:
            out.append(")")
            depth -= 1
        elif ch == "," and depth:
            out.append("|")
        elif ch == "[":
            end = pattern.find("]", i + 1)
            if end == -1:
                out.append(re.escape(ch))
            else:
                body = pattern[i + 1 : end]
                body = "^" + body[1:] if body.startswith("!") else body
                out.append("[" + body.replace("\\", "\\\\") + "]")
                i = end
        else:
            out.append(re.escape(ch))
        i += 1
    out.append(")" * depth)
    return re.compile("".join(out))


def _matches(watcher: dict[str, Any], path: str, change: int) -> bool:
    kind = watcher.get("kind", _ALL_KINDS)
    if isinstance(kind, int) and not kind & _KIND_BIT.get(change, 0):
        return False
    glob = watcher.get("globPattern")
    if isinstance(glob, str):
        return glob_regex(glob).fullmatch(path) is not None or glob_regex(glob).fullmatch(path.lstrip("/")) is not None
    if isinstance(glob, dict) and isinstance(glob.get("pattern"), str):
        base_uri = glob.get("baseUri")
        base_uri = base_uri.get("uri") if isinstance(base_uri, dict) else base_uri
        base = uri_to_path(base_uri) if isinstance(base_uri, str) else None
        if base is None:
            return False
        try:
            relative = Path(path).relative_to(base).as_posix()
        except ValueError:
            return False
        return glob_regex(glob["pattern"]).fullmatch(relative) is not None
    return False


def matching_events(regs: list[dict[str, Any]], changes: Iterable[tuple[int, str]]) -> list[dict[str, Any]]:
    """FileEvents for the changes any registration's watchers match."""
    watchers = [
        w for r in regs for w in ((r.get("registerOptions") or {}).get("watchers") or []) if isinstance(w, dict)
    ]
    events = []
    for change, path in sorted(changes, key=lambda c: c[1]):
        if any(_matches(w, path, int(change)) for w in watchers):
            events.append({"uri": Path(path).as_uri(), "type": int(change)})
    return events


async def forward(instance: Instance, changes: Iterable[tuple[int, str]]) -> None:
    """Send the server the watched-file events no client will send it."""
    regs = instance.registrations.of_method(registrations.WATCHED_FILES)
    if not regs or not instance.ready or registrations.some_client_watches_files(instance):
        return
    events = matching_events(regs, changes)
    if not events:
        return
    log.debug("%s: %d file events sent by the daemon", instance.name, len(events))
    try:
        await instance.notify_server(registrations.WATCHED_FILES, {"changes": events})
    except ServerUnavailable:
        pass
