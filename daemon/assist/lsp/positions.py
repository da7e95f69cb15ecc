"""1-based tool positions versus LSP's 0-based UTF-16 positions, and `path:line` rendering.

Tools count lines and columns from 1 in characters (code points), as a
person or a model reads them; LSP counts from 0 in UTF-16 code units. The two
differ on any line with characters outside the BMP, so every conversion goes
through the line's text.
"""

from __future__ import annotations

import re
from pathlib import Path

from lensmux.daemon.mux.documents.positions import UTF16, index_at, units

_EOL = re.compile(r"\r\n|\r|\n")


def split_lines(text: str) -> list[str]:
    """The lines of `text` without their line ends."""
    return _EOL.split(text)


def chars_from_utf16(line: str, offset: int) -> int:
    """Characters of `line` covering its first `offset` UTF-16 code units (clamped to the line)."""
    return index_at(line, offset, UTF16)[0]


def to_lsp(lines: list[str], line: int, column: int) -> dict[str, int]:
    """An LSP position for a 1-based (line, column) in characters."""
    row = min(max(line - 1, 0), max(len(lines) - 1, 0))
    text = lines[row] if lines else ""
    return {"line": row, "character": units(text[: min(max(column - 1, 0), len(text))], UTF16)}


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
