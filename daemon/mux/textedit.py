"""Apply LSP content changes to a document's text, positions in UTF-16 code units.

The daemon negotiates UTF-16 (the encoding every client must support) with
every server, so this is the only position arithmetic it needs.
"""

from __future__ import annotations

import re
from typing import Any

_EOL = re.compile(r"\r\n|\r|\n")


class EditOutOfRange(ValueError):
    """A range points outside the document; the edit was clamped."""


def line_starts(text: str) -> list[int]:
    """Offsets (in code points) at which each line starts."""
    starts = [0]
    starts.extend(m.end() for m in _EOL.finditer(text))
    return starts


def _utf16_to_index(line: str, units: int) -> tuple[int, bool]:
    """Code-point index for a UTF-16 offset in one line; flag if clamped."""
    if line.isascii():
        return (units, False) if units <= len(line) else (len(line), True)
    count = 0
    for idx, ch in enumerate(line):
        if count >= units:
            return idx, count != units
        count += 2 if ord(ch) > 0xFFFF else 1
    return len(line), count < units


def offset_of(text: str, starts: list[int], line: int, character: int) -> tuple[int, bool]:
    """Code-point offset of an LSP position; flag if it had to be clamped."""
    if line < 0 or character < 0:
        return 0, True
    if line >= len(starts):
        return len(text), True
    begin = starts[line]
    end = starts[line + 1] if line + 1 < len(starts) else len(text)
    content = text[begin:end].rstrip("\r\n")
    idx, clamped = _utf16_to_index(content, character)
    return begin + idx, clamped


def apply_changes(text: str, changes: list[dict[str, Any]]) -> tuple[str, bool]:
    """Apply `contentChanges` in order; return the new text and whether any range was clamped.

    Clamping follows the specification (a character past the line end means
    the line end); the caller resynchronises the server with the full text
    when it happened, so the server and the daemon never diverge.
    """
    clamped_any = False
    for change in changes:
        new_text = change.get("text", "")
        rng = change.get("range")
        if rng is None:
            text = new_text
            continue
        starts = line_starts(text)
        start, c1 = offset_of(text, starts, rng["start"]["line"], rng["start"]["character"])
        end, c2 = offset_of(text, starts, rng["end"]["line"], rng["end"]["character"])
        if end < start:
            start, end = end, start
            clamped_any = True
        clamped_any = clamped_any or c1 or c2
        text = text[:start] + new_text + text[end:]
    return text, clamped_any


def position_at(text: str, offset: int) -> dict[str, int]:
    """The LSP position (UTF-16) of a code-point offset."""
    starts = line_starts(text)
    lo, hi = 0, len(starts) - 1
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if starts[mid] <= offset:
            lo = mid
        else:
            hi = mid - 1
    prefix = text[starts[lo] : offset]
    units = sum(2 if ord(ch) > 0xFFFF else 1 for ch in prefix)
    return {"line": lo, "character": units}
