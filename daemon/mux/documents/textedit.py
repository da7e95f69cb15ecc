"""Apply LSP content changes to a document's text, in any position encoding.

A client's didChange ranges are in the encoding that client was told; the
server's copy is kept in the encoding the server chose. `translate_changes`
applies a client's changes and rewrites their ranges for the server, so both
copies stay the same text (positions.py has the unit arithmetic).
"""

from __future__ import annotations

import re
from typing import Any

from lensmux.daemon.mux.documents.positions import UTF16, index_at, units

_EOL = re.compile(r"\r\n|\r|\n")


class EditOutOfRange(ValueError):
    """A range points outside the document; the edit was clamped."""


def line_starts(text: str) -> list[int]:
    """Offsets (in code points) at which each line starts."""
    starts = [0]
    starts.extend(m.end() for m in _EOL.finditer(text))
    return starts


def offset_of(text: str, starts: list[int], line: int, character: int, encoding: str = UTF16) -> tuple[int, bool]:
    """Code-point offset of an LSP position; flag if it had to be clamped."""
    if line < 0 or character < 0:
        return 0, True
    if line >= len(starts):
        return len(text), True
    begin = starts[line]
    end = starts[line + 1] if line + 1 < len(starts) else len(text)
    content = text[begin:end].rstrip("\r\n")
    idx, clamped = index_at(content, character, encoding)
    return begin + idx, clamped


def translate_changes(
    text: str, changes: list[dict[str, Any]], source: str = UTF16, target: str = UTF16
) -> tuple[str, list[dict[str, Any]], bool]:
    """Apply `contentChanges` whose ranges are in `source`; return the new text, the
    same changes with ranges in `target`, and whether any range was clamped.

    Clamping follows the specification (a character past the line end means
    the line end); the caller resynchronises the server with the full text
    when it happened, so the server and the daemon never diverge.
    """
    clamped_any = False
    translated: list[dict[str, Any]] = []
    for change in changes:
        new_text = change.get("text", "")
        rng = change.get("range")
        if rng is None:
            text = new_text
            translated.append(change)
            continue
        starts = line_starts(text)
        start, c1 = offset_of(text, starts, rng["start"]["line"], rng["start"]["character"], source)
        end, c2 = offset_of(text, starts, rng["end"]["line"], rng["end"]["character"], source)
        if end < start:
            start, end = end, start
            clamped_any = True
        clamped_any = clamped_any or c1 or c2
        if source == target:
            translated.append(change)
        else:
            moved = {"start": _position(text, starts, start, target), "end": _position(text, starts, end, target)}
            translated.append({k: v for k, v in change.items() if k != "rangeLength"} | {"range": moved})
        text = text[:start] + new_text + text[end:]
    return text, translated, clamped_any


def apply_changes(text: str, changes: list[dict[str, Any]], encoding: str = UTF16) -> tuple[str, bool]:
    """Apply `contentChanges` in order; return the new text and whether any range was clamped."""
    text, _, clamped = translate_changes(text, changes, encoding, encoding)
    return text, clamped


def _position(text: str, starts: list[int], offset: int, encoding: str) -> dict[str, int]:
    lo, hi = 0, len(starts) - 1
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if starts[mid] <= offset:
            lo = mid
        else:
            hi = mid - 1
    return {"line": lo, "character": units(text[starts[lo] : offset], encoding)}


def position_at(text: str, offset: int, encoding: str = UTF16) -> dict[str, int]:
    """The LSP position of a code-point offset, in `encoding`."""
    return _position(text, line_starts(text), offset, encoding)
