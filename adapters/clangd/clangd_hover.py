"""clangd's hover in plaintext, rebuilt from the markdown the shared clangd answers.

clangd builds one document per hover (a heading, "provided by", rulers, paragraphs
such as "→ `int`" or "Type: `int`", a bullet list of parameters, the declaration's
comment, the definition in a code block, "provides ..." for an include) and renders
it in the format the client declared (clangd 22, support/Markup.cpp). The shared
clangd is told markdown; a client that did not declare it gets from clangd alone the
same document rendered as plaintext. This module parses the markdown back into that
document and renders it as clangd renders plaintext:

- headings lose their `### `, code spans their backticks (but backtick-quoted code
  in a comment keeps them), rulers become blank lines, code blocks their fences;
- comment paragraphs are unescaped and their lines joined with spaces unless a line
  ends with two spaces or punctuation or the next starts with `-*@\\>#` or a numbered
  item (whitespace runs collapse); markdown adds two spaces before a newline after
  punctuation or before `@` or `\\`, which are taken off first.

A comment paragraph is read back (adapters/clangd/clangd_markup.py) only if rendering it again
gives the same markdown (clangd escapes every backslash and every markup character it
would render, so the reading is unique). clangd's default `Documentation.CommentFormat` (Plaintext) escapes
comments; under `CommentFormat: Markdown` only HTML tags and entities are escaped,
which is tried when the first reading does not render back. Anything else, such as
`CommentFormat: Doxygen`, whose markdown is laid out otherwise, gives None.
"""

from __future__ import annotations

import re

from lensmux.adapters.clangd.clangd_markup import PUNCTUATION, SPACE, Chunk, Code, comment_texts, read_escaped

_FENCE = re.compile(r"^(`{3,})([^`]*)$")
# Paragraphs clangd writes itself in a hover with code in them, in the order it writes them, before
# the comment ("Offset: ", "Size: ", "Passed ..." have no code: read as a comment's, they render alike).
_RETURNS = re.compile(r"^→ `.*`$")
_PARAMETERS = re.compile(r"^Parameters:$")
_TYPE = re.compile(r"^Type: `.*`$")
_VALUE = re.compile(r"^Value = `.*`$")
_PLAIN_BREAK_STARTS = "-*@\\>#`"


def plaintext_hover(markdown: str) -> str | None:
    """The plaintext clangd gives a client without markdown, from its markdown hover; None if not clangd's layout."""
    lines = markdown.split("\n")
    head = _head(lines)
    if head is None:
        return None
    heading, provider, body_start = head
    tail = _tail(lines, body_start)
    if tail is None:
        return None
    body_end, definition, provides = tail
    body = _paragraphs(lines[body_start:body_end])
    blocks = _body_blocks(body)
    if blocks is None:
        return None
    rendered = [_paragraph(_inline(heading, keep=False))]
    if provider is not None:
        rendered.append(_paragraph(_inline(provider, keep=False)))
    rendered.append("\n")
    rendered += blocks
    if definition is not None:
        rendered += ["\n", "\n" + definition + "\n\n"]
    if provides is not None:
        rendered += ["\n", _paragraph(_inline(provides, keep=False))]
    return _finish("".join(rendered))


def _head(lines: list[str]) -> tuple[str, str | None, int] | None:
    """The heading's text, the "provided by" paragraph if any, and where the body starts (after the first ruler)."""
    # clangd's default layout names the symbol in its heading, as code; with
    # `CommentFormat: Doxygen` the heading of a symbol with a definition does not.
    if not lines or not lines[0].startswith("### ") or not lines[0].endswith("`"):
        return None
    i = 1
    provider = None
    if len(lines) > 3 and lines[1] == "" and lines[2].startswith("provided by "):
        provider = lines[2]
        i = 3
    if len(lines) == i:
        return lines[0][4:], provider, i  # a hover that is only a heading
    if lines[i : i + 2] != ["", "---"]:
        return None
    return lines[0][4:], provider, i + 2


def _tail(lines: list[str], start: int) -> tuple[int, str | None, str | None] | None:
    """Where the body ends, the definition's code if any, and the "provides" paragraph if any."""
    end = len(lines)
    provides = None
    if end - start >= 3 and lines[end - 1].startswith("provides ") and lines[end - 3 : end - 1] == ["", "---"]:
        provides = lines[end - 1]
        end -= 3
    definition = None
    fence = _FENCE.match(lines[end - 1]) if end > start else None
    if fence is not None and fence.group(2) == "":
        marker = fence.group(1)
        opening = next(
            (j for j in range(end - 2, start - 1, -1) if (m := _FENCE.match(lines[j])) and m.group(1) == marker),
            None,
        )
        if opening is None:
            return None
        definition = "\n".join(lines[opening + 1 : end - 1])
        if opening == start:
            end = start  # nothing between the heading's ruler and the code block
        elif opening >= start + 2 and lines[opening - 2 : opening] == ["", "---"]:
            end = opening - 2
        else:
            return None
    return end, definition, provides


def _paragraphs(lines: list[str]) -> list[list[str]]:
    """Runs of lines between empty lines (a line of spaces belongs to its paragraph, as clangd keeps it)."""
    out: list[list[str]] = []
    run: list[str] = []
    for line in lines:
        if line == "":
            if run:
                out.append(run)
            run = []
        else:
            run.append(line)
    if run:
        out.append(run)
    return out


def _body_blocks(paragraphs: list[list[str]]) -> list[str] | None:
    """The body in plaintext: clangd's own paragraphs (and the parameter list), then the comment's."""
    out: list[str] = []
    i = 0

    def take(pattern: re.Pattern[str]) -> bool:
        nonlocal i
        if i < len(paragraphs) and len(paragraphs[i]) == 1 and pattern.match(paragraphs[i][0]):
            out.append(_paragraph(_inline(paragraphs[i][0], keep=False)))
            i += 1
            return True
        return False

    function = take(_RETURNS)
    if take(_PARAMETERS):
        function = True
        if i >= len(paragraphs) or not paragraphs[i][0].startswith("- "):
            return None
        out.append(_bullets(paragraphs[i]))
        i += 1
    if not function:
        take(_TYPE)  # clangd gives a type only to what has no return type and no parameters
    take(_VALUE)
    texts = comment_texts(paragraphs[i:])
    if texts is None:
        return None
    out += [_paragraph(chunks) for chunks in texts]
    return out


def _bullets(lines: list[str]) -> str:
    """A parameter list: one item per `- ` line, its continuation lines indented by two spaces."""
    items: list[list[str]] = []
    for line in lines:
        if line.startswith("- ") or not items:
            items.append([line[2:]])
        else:
            items[-1].append(line[2:] if line.startswith("  ") else line)
    out = []
    for item in items:
        text = _finish(_paragraph(_inline("\n".join(item), keep=False)))
        out.append("- " + _indent(text) + "\n")
    return "".join(out) + "\n"


def _indent(text: str) -> str:
    """Two spaces after each newline that is not followed by another (clangd's indentLines)."""
    return re.sub(r"\n(?=[^\n])", "\n  ", text)


# -- plaintext rendering ----------------------------------------------------------------------


def _inline(text: str, *, keep: bool) -> list[Chunk]:
    """Chunks of one of clangd's own paragraphs (escaped text, code spans without `keep`)."""
    chunks = read_escaped(text) or [text]
    return [Code(c.contents, keep) if isinstance(c, Code) else c for c in chunks]


def _paragraph(chunks: list[Chunk]) -> str:
    """A paragraph in plaintext (Markup.cpp Paragraph::renderPlainText), with its blank line."""
    text: list[str] = []
    space = False
    for chunk in chunks:
        if isinstance(chunk, Code):
            marker = _marker(chunk.contents) if chunk.keep else ""
            text.append((" " if space else "") + marker + chunk.contents + marker)
            space = False
        else:
            text.append((" " if space else "") + chunk)
            space = chunk != "" and chunk[-1] in SPACE
    return _plaintext_lines("".join(text)) + "\n\n"


def _marker(code: str) -> str:
    return next((m for m in ("`", "'", '"') if m not in code), "`")


def _plaintext_lines(text: str) -> str:
    """Lines joined with a space unless clangd sees a line break (renderNewlinesPlaintext)."""
    out: list[str] = []
    lines = text.strip(SPACE).split("\n")
    for k, raw in enumerate(lines):
        line = raw.lstrip(SPACE)
        if line == "":
            continue
        rest = "\n".join(lines[k + 1 :])
        out.append(" ".join(w for w in re.split("[ \t\n\v\f\r]+", line) if w))
        if _plaintext_break(line, rest):
            out.append("\n")
        elif rest != "":
            out.append(" ")
    return "".join(out)


def _plaintext_break(line: str, rest: str) -> bool:
    if line.endswith("  "):
        return True
    stripped = line.rstrip(SPACE)
    if stripped != "" and stripped[-1] in PUNCTUATION:
        return True
    nxt = rest.lstrip(" \t")
    if nxt == "":
        return False
    if nxt[0] in _PLAIN_BREAK_STARTS:
        return True
    digits = len(nxt) - len(nxt.lstrip("0123456789"))
    return digits > 0 and nxt[digits : digits + 1] in (".", ")")


def _finish(text: str) -> str:
    """clangd's last step: trimmed, and never more than one empty line in a row."""
    return re.sub(r"\n{3,}", "\n\n", text.strip(SPACE))
