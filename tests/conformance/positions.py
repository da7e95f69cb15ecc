"""Position encodings: columns as a client computes them, and back to code points for comparing.

Two correct servers may announce different encodings to the same editor (the spec lets the
server pick among those offered), so transcripts compare positions as code-point columns.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

TextOf = Callable[[str], str | None]


def column(line: str, index: int, encoding: str) -> int:
    """The column of code point `index` of `line` in `encoding` units."""
    prefix = line[:index]
    if encoding == "utf-8":
        return len(prefix.encode("utf-8"))
    if encoding == "utf-32":
        return len(prefix)
    return len(prefix.encode("utf-16-le")) // 2


def code_points(line: str, col: int, encoding: str) -> int:
    """The code-point index of column `col` (in `encoding` units) of `line`; clamped to the line."""
    units = 0
    for index, char in enumerate(line):
        if units >= col:
            return index
        if encoding == "utf-8":
            units += len(char.encode("utf-8"))
        elif encoding == "utf-32":
            units += 1
        else:
            units += len(char.encode("utf-16-le")) // 2
    return len(line)


def position_of(text: str, needle: str, *, after: bool = False, occurrence: int = 0) -> tuple[int, int]:
    """(line, code-point column) of the start (or end) of the n-th `needle` in text."""
    at = -1
    for _ in range(occurrence + 1):
        at = text.index(needle, at + 1)
    if after:
        at += len(needle)
    line = text.count("\n", 0, at)
    return line, at - (text.rfind("\n", 0, at) + 1)


def lsp_position(text: str, line_char: tuple[int, int], encoding: str) -> dict[str, int]:
    """An LSP Position for (line, code-point column) of text, in `encoding`."""
    line, char = line_char
    return {"line": line, "character": column(text.split("\n")[line], char, encoding)}


def to_code_points(value: Any, encoding: str, text_of: TextOf, uri: str | None = None) -> Any:
    """A copy of `value` with every Position's character in code points of the text its URI names.

    The URI of a position is the nearest enclosing `uri`/`targetUri`/`textDocument.uri`, a key of
    a WorkspaceEdit's `changes`, or `uri` given by the caller (the request's document).
    """
    if isinstance(value, list):
        return [to_code_points(item, encoding, text_of, uri) for item in value]
    if not isinstance(value, dict):
        return value
    if set(value) == {"line", "character"} and isinstance(value["character"], int) and uri is not None:
        text = text_of(uri)
        if text is None:
            return value
        lines = text.split("\n")
        line = value["line"]
        if not isinstance(line, int) or not 0 <= line < len(lines):
            return value
        return {"line": line, "character": code_points(lines[line], value["character"], encoding)}
    here = uri
    for key in ("uri", "targetUri"):
        if isinstance(value.get(key), str):
            here = value[key]
    document = value.get("textDocument")
    if isinstance(document, dict) and isinstance(document.get("uri"), str):
        here = document["uri"]
    out: dict[str, Any] = {}
    for key, item in value.items():
        if key == "changes" and isinstance(item, dict):
            out[key] = {u: to_code_points(edits, encoding, text_of, u) for u, edits in item.items()}
        else:
            out[key] = to_code_points(item, encoding, text_of, here)
    return out


def negotiated_encoding(initialize_result: dict[str, Any]) -> str:
    """The encoding a server announced: 3.17 `positionEncoding`, clangd's `offsetEncoding`, else utf-16."""
    caps = initialize_result.get("capabilities", {})
    announced = caps.get("positionEncoding") if isinstance(caps, dict) else None
    if isinstance(announced, str):
        return announced
    offset = initialize_result.get("offsetEncoding")
    return offset if isinstance(offset, str) else "utf-16"
