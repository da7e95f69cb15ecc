"""1-based tool positions versus LSP's 0-based UTF-16 positions, and `path:line` rendering.

Tools count lines and columns from 1 in characters (code points), as a
person or a model reads them; LSP counts from 0 in UTF-16 code units. The two
differ on any line with characters outside the BMP, so every conversion goes
through the line's text.
"""

from __future__ import annotations

import re
from pathlib import Path

_EOL = re.compile(r"\r\n|\r|\n")


def split_lines(text: str) -> list[str]:
    """The lines of `text` without their line ends."""
    return _EOL.split(text)


def utf16_units(line: str, chars: int) -> int:
    """UTF-16 code units in the first `chars` characters of `line`."""
    head = line[: max(chars, 0)]
    return len(head) + sum(1 for ch in head if ord(ch) > 0xFFFF)


def chars_from_utf16(line: str, units: int) -> int:
    """Characters of `line` covering its first `units` UTF-16 code units (clamped to the line)."""
    count = 0
    for idx, ch in enumerate(line):
        if count >= units:
            return idx
        count += 2 if ord(ch) > 0xFFFF else 1
    return len(line)


def to_lsp(lines: list[str], line: int, column: int) -> dict[str, int]:
    """An LSP position for a 1-based (line, column) in characters."""
    row = min(max(line - 1, 0), max(len(lines) - 1, 0))
    text = lines[row] if lines else ""
    return {"line": row, "character": utf16_units(text, min(max(column - 1, 0), len(text)))}


def from_lsp(lines: list[str], position: dict[str, int]) -> tuple[int, int]:
    """The 1-based (line, column in characters) of an LSP position."""
    row = int(position.get("line", 0))
    text = lines[row] if 0 <= row < len(lines) else ""
    return row + 1, chars_from_utf16(text, int(position.get("character", 0))) + 1


def first_code_column(line_text: str) -> int:
    """The 1-based column of the first non-blank character (1 on a blank line)."""
    stripped = line_text.lstrip()
    return len(line_text) - len(stripped) + 1 if stripped else 1


def display_path(path: Path, root: Path) -> str:
    """`path` relative to the root, or absolute outside it."""
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return str(path)


def source_line(lines: list[str], line: int, width: int = 160) -> str:
    """The stripped text of 1-based `line`, cut to `width` characters."""
    if not 1 <= line <= len(lines):
        return ""
    text = lines[line - 1].strip()
    return text if len(text) <= width else text[: width - 1] + "…"
