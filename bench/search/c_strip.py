"""Doc-comment stripping for the C projects of the label-free search evaluation.

The C counterpart of docstring_strip.py: a block comment (`/* ... */`) or a run of
`//` lines that ends right above a function definition or prototype (only blank
lines between) is that function's documentation; it is blanked out, lines kept, so
line numbers do not move. Comments inside bodies, license headers (followed by
`#include`) and comments above types or macros stay.

A definition is found by its head: the text from the line after the comment up to
the first `{` or `;` outside parentheses, which must end in `NAME(...)` (optionally
followed by qualifiers such as `const`), where NAME is not a C keyword. Its end is
the matching `}` (strings, character literals and comments skipped). This is a
heuristic, not a C parser: preprocessor-heavy heads that do not match are left
alone (their comments stay and they give no query), which only makes the set smaller.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["CDefinition", "strip_c_comments"]

_KEYWORDS = frozenset(
    [
        "if",
        "for",
        "while",
        "switch",
        "return",
        "sizeof",
        "do",
        "else",
        "case",
        "typedef",
        "struct",
        "union",
        "enum",
        "defined",
        "alignof",
        "_Alignof",
    ]
)
_HEAD_NAME = re.compile(r"([A-Za-z_]\w*)\s*\((?:[^()]|\([^()]*\))*\)\s*(?:const|noexcept|override|\w+\([^()]*\))*\s*$")
# A head is a declaration, not an expression or a macro: no `=` outside the parameter list, no `#`.
_MAX_HEAD_LINES = 12


@dataclass(frozen=True, slots=True)
class CDefinition:
    """One documented function of the stripped file; lines are 0-based."""

    name: str
    first_line: int  # the head's first line (return type)
    def_line: int  # the line holding the name
    end_line: int
    comment: str  # the removed comment's text, markers and leading `*` gone
    definition: bool  # a body follows (False: a prototype)


def _comment_text(raw: str) -> str:
    if raw.startswith("//"):
        lines = [line.strip().lstrip("/").strip() for line in raw.splitlines()]
    else:
        body = raw[2:-2]
        lines = [line.strip().lstrip("*").strip() for line in body.splitlines()]
    return "\n".join(lines).strip().lstrip("!<").strip()


def _skip_literal(text: str, i: int) -> int:
    """Index after the string/char literal or comment starting at i (i itself if none)."""
    c = text[i]
    if c in "\"'":
        j = i + 1
        while j < len(text) and text[j] != c:
            j += 2 if text[j] == "\\" else 1
        return j + 1
    if text.startswith("/*", i):
        end = text.find("*/", i + 2)
        return len(text) if end < 0 else end + 2
    if text.startswith("//", i):
        end = text.find("\n", i)
        return len(text) if end < 0 else end
    return i


def _matching_brace(text: str, open_at: int) -> int:
    depth, i = 0, open_at
    while i < len(text):
        j = _skip_literal(text, i)
        if j != i:
            i = j
            continue
        if text[i] == "{":
            depth += 1
        elif text[i] == "}":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    return len(text) - 1


def _comments(text: str) -> list[tuple[int, int]]:
    """(start, end) offsets of top-level comments; a run of `//` lines is one comment."""
    out: list[tuple[int, int]] = []
    i = 0
    while i < len(text):
        c = text[i]
        if c in "\"'":
            i = _skip_literal(text, i)
        elif text.startswith("/*", i) or text.startswith("//", i):
            end = _skip_literal(text, i)
            if text.startswith("//", i) and out and text.startswith("//", out[-1][0]):
                between = text[out[-1][1] : i]
                if between.strip() == "" and between.count("\n") == 1:
                    out[-1] = (out[-1][0], end)
                    i = end
                    continue
            out.append((i, end))
            i = end
        else:
            i += 1
    return out


def _head(text: str, start: int) -> tuple[int, int, str] | None:
    """(offset of `{` or `;`, the head's end, kind) of a function head starting at `start`, else None."""
    depth = 0
    i = start
    newlines = 0
    while i < len(text):
        c = text[i]
        if c in "\"'" or text.startswith("/*", i) or text.startswith("//", i):
            return None
        if c == "#" and depth == 0:
            return None
        if c == "\n":
            newlines += 1
            if newlines > _MAX_HEAD_LINES:
                return None
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
        elif depth == 0 and c in "{;=":
            return (i, i, c) if c != "=" else None
        i += 1
    return None


def strip_c_comments(source: str) -> tuple[str, list[CDefinition]]:
    """The source with function doc comments blanked, and the documented functions."""
    text = source
    blank: list[tuple[int, int]] = []
    found: list[CDefinition] = []
    for start, end in _comments(text):
        after = end
        while after < len(text) and text[after] in " \t\r\n":
            after += 1
        if after >= len(text):
            continue
        # The comment must sit on lines of its own (not trail code) and be followed by the head.
        line_start = text.rfind("\n", 0, start) + 1
        if text[line_start:start].strip():
            continue
        head = _head(text, after)
        if head is None:
            continue
        stop, _, kind = head
        head_text = " ".join(text[after:stop].split())
        match = _HEAD_NAME.search(head_text)
        if match is None or match.group(1) in _KEYWORDS or head_text.split(" ", 1)[0] in _KEYWORDS - {"struct"}:
            continue
        if not re.match(r"[A-Za-z_]", head_text) or "(" not in head_text[: match.start(1) + len(match.group(1)) + 1]:
            continue
        name = match.group(1)
        name_at = text.find(name + "(", after, stop + 1)
        if name_at < 0:
            name_at = text.find(name, after, stop + 1)
        close = _matching_brace(text, stop) if kind == "{" else stop
        found.append(
            CDefinition(
                name=name,
                first_line=text.count("\n", 0, after),
                def_line=text.count("\n", 0, max(name_at, after)),
                end_line=text.count("\n", 0, close),
                comment=_comment_text(text[start:end]),
                definition=kind == "{",
            )
        )
        blank.append((start, end))
    pieces: list[str] = []
    last = 0
    for start, end in blank:
        pieces.append(text[last:start])
        pieces.append(re.sub(r"[^\n]", "", text[start:end]))  # keep only the line breaks
        last = end
    pieces.append(text[last:])
    return "".join(pieces), found


def c_functions(text: str) -> list[tuple[int, int]]:
    """(first line, last line) of every top-level function definition, documented or not.

    A `{` at brace depth 0 opens a function when the text since the previous `;`, `}`,
    preprocessor line or comment reads as a function head (as in strip_c_comments).
    """
    out: list[tuple[int, int]] = []
    i, head_start = 0, 0
    while i < len(text):
        j = _skip_literal(text, i)
        if j != i:
            if not text.startswith(("/*", "//"), i):
                i = j
                continue
            head_start = j
            i = j
            continue
        c = text[i]
        if c == "#" and not text[text.rfind("\n", 0, i) + 1 : i].strip():
            end = i
            while True:  # a directive ends at a line break not escaped by a backslash
                end = text.find("\n", end)
                if end < 0 or text[end - 1] != "\\":
                    break
                end += 1
            i = head_start = len(text) if end < 0 else end + 1
            continue
        if c in ";}":
            head_start = i + 1
        elif c == "{":
            head_text = " ".join(text[head_start:i].split())
            if head_text.endswith('extern "C"') or head_text.startswith("namespace"):
                i = head_start = i + 1  # a linkage block or namespace: its functions are top level
                continue
            match = _HEAD_NAME.search(head_text)
            close = _matching_brace(text, i)
            if (
                match is not None
                and match.group(1) not in _KEYWORDS
                and "=" not in head_text
                and re.match(r"[A-Za-z_]", head_text)
                and head_text.split(" ", 1)[0] not in _KEYWORDS
            ):
                start = head_start
                while start < i and text[start] in " \t\r\n":
                    start += 1
                out.append((text.count("\n", 0, start), text.count("\n", 0, close)))
            i = head_start = close + 1
            continue
        i += 1
    return out
