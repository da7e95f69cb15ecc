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

A comment paragraph is read back only if rendering it again gives the same markdown
(clangd escapes every backslash and every markup character it would render, so the
reading is unique). clangd's default `Documentation.CommentFormat` (Plaintext) escapes
comments; under `CommentFormat: Markdown` only HTML tags and entities are escaped,
which is tried when the first reading does not render back. Anything else, such as
`CommentFormat: Doxygen`, whose markdown is laid out otherwise, gives None.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_FENCE = re.compile(r"^(`{3,})([^`]*)$")
# Paragraphs clangd writes itself in a hover with code in them, in the order it writes them, before
# the comment ("Offset: ", "Size: ", "Passed ..." have no code: read as a comment's, they render alike).
_RETURNS = re.compile(r"^→ `.*`$")
_PARAMETERS = re.compile(r"^Parameters:$")
_TYPE = re.compile(r"^Type: `.*`$")
_VALUE = re.compile(r"^Value = `.*`$")
_PUNCTUATION = ".:,;!?"
_PLAIN_BREAK_STARTS = "-*@\\>#`"
_MARKDOWN_BREAK_STARTS = "@\\"
_SPACE = " \t\n\v\f\r"


@dataclass(frozen=True)
class _Code:
    """An inline code span; `keep` spans (backticks in a comment) keep their backticks in plaintext."""

    contents: str
    keep: bool = False


_Chunk = str | _Code


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
    texts = _comment_texts(paragraphs[i:])
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


# -- comment paragraphs -----------------------------------------------------------------------


def _comment_texts(paragraphs: list[list[str]]) -> list[list[_Chunk]] | None:
    """Each comment paragraph as clangd's chunks, read as escaped markdown, else as markdown comments."""
    for read, render in ((_read_escaped, _render_escaped), (_read_markdown, _render_markdown)):
        out: list[list[_Chunk]] = []
        for lines in paragraphs:
            text = _without_markdown_breaks(lines)
            chunks = read(text) if text is not None else None
            if chunks is None or _markdown_breaks(render(chunks)) != "\n".join(lines):
                break
            out.append(chunks)
        else:
            return out
    return None


def _without_markdown_breaks(lines: list[str]) -> str | None:
    """A paragraph's text without the two spaces markdown rendering adds to force a line break."""
    out = []
    for k, line in enumerate(lines):
        if k + 1 < len(lines) and _markdown_break(line, lines[k + 1]):
            if not line.endswith("  "):
                return None
            out.append(line[:-2])
        else:
            out.append(line)
    return "\n".join(out)


def _markdown_breaks(text: str) -> str:
    lines = text.split("\n")
    return "\n".join(
        line + "  " if k + 1 < len(lines) and _markdown_break(line, lines[k + 1]) else line
        for k, line in enumerate(lines)
    )


def _markdown_break(line: str, following: str) -> bool:
    """clangd's markdown forces a break after punctuation and before a doxygen command (`@`, `\\`)."""
    stripped = line.rstrip(_SPACE)
    nxt = following.lstrip(" \t")
    return (stripped != "" and stripped[-1] in _PUNCTUATION) or (nxt != "" and nxt[0] in _MARKDOWN_BREAK_STARTS)


def _read_escaped(text: str) -> list[_Chunk] | None:
    """Chunks of a paragraph rendered with every markup character escaped: `\\x` is x, backticks delimit code."""
    chunks: list[_Chunk] = []
    buf: list[str] = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == "\\":
            if i + 1 >= len(text):
                return None
            buf.append(text[i + 1])
            i += 2
        elif ch == "`":
            code = _code_span(text, i)
            if code is None:
                return None
            contents, i = code
            if buf:
                chunks.append("".join(buf))
                buf = []
            chunks.append(_Code(contents, keep=True))
        else:
            buf.append(ch)
            i += 1
    if buf:
        chunks.append("".join(buf))
    return chunks


def _read_markdown(text: str) -> list[_Chunk] | None:
    """A paragraph rendered as markdown comments: code spans as clangd found them, HTML tags and entities escaped.

    A section heading or a ruler is taken for `CommentFormat: Doxygen`'s layout, not read.
    """
    if text.startswith(("#", "**")) or text == "---":
        return None
    chunks: list[_Chunk] = []
    for piece in _quoted_spans(text):
        if isinstance(piece, _Code):
            chunks.append(piece)
            continue
        out: list[str] = []
        i = 0
        while i < len(piece):
            if piece[i] == "\\" and i + 1 < len(piece) and piece[i + 1] in "<&":
                i += 1
            out.append(piece[i])
            i += 1
        chunks.append("".join(out))
    return chunks


def _quoted_spans(text: str) -> list[_Chunk]:
    """Text and backtick-quoted code, as clangd splits a comment paragraph (getBacktickQuoteRange)."""
    out: list[_Chunk] = []
    rest = text
    i = 0
    while i < len(rest):
        if rest[i] == "`":
            end = _quote_end(rest, i)
            if end is not None:
                if i:
                    out.append(rest[:i])
                out.append(_Code(rest[i + 1 : end], keep=True))
                rest, i = rest[end + 1 :], 0
                continue
        i += 1
    if rest:
        out.append(rest)
    return out


def _quote_end(line: str, start: int) -> int | None:
    if start and line[start - 1] not in " \t(=":
        return None
    end = next((j for j in range(start + 1, len(line)) if line[j] in "`\n"), None)
    if end is None or line[end] == "\n":
        return None
    contents = line[start + 1 : end]
    if contents == "" or contents[0] in _SPACE or contents[-1] in _SPACE:
        return None
    if end + 1 < len(line) and line[end + 1] not in " \t)=.,;:":
        return None
    return end


def _code_span(text: str, start: int) -> tuple[str, int] | None:
    """The contents of the code span opening at `start` and where it ends (doubled backticks are one)."""
    contents: list[str] = []
    j = start + 1
    while j < len(text):
        if text[j] == "`":
            if text.startswith("``", j):
                contents.append("`")
                j += 2
                continue
            code = "".join(contents)
            if len(code) >= 2 and code[0] == " " and code[-1] == " ":
                code = code[1:-1]  # clangd pads a span that starts or ends with a backtick
            return code, j + 1
        contents.append(text[j])
        j += 1
    return None


def _render_escaped(chunks: list[_Chunk]) -> str:
    """clangd's escaped markdown of a comment paragraph (Markup.cpp renderEscapedMarkdown)."""
    out = []
    for k, chunk in enumerate(chunks):
        out.append(_inline_block(chunk.contents) if isinstance(chunk, _Code) else _escape(chunk, starts_line=k == 0))
    return "".join(out)


def _render_markdown(chunks: list[_Chunk]) -> str:
    """clangd's markdown of a comment paragraph under `CommentFormat: Markdown` (Markup.cpp renderMarkdown)."""
    out: list[str] = []
    for chunk in chunks:
        if isinstance(chunk, _Code):
            out.append(_inline_block(chunk.contents))
            continue
        lines = chunk.split("\n")
        for number, line in enumerate(lines):
            out += ["\\" + c if c in "<&" and _html_escape(c, line[i + 1 :]) else c for i, c in enumerate(line)]
            if number + 1 < len(lines):
                out.append("\n")
    return "".join(out)


def _inline_block(code: str) -> str:
    doubled = code.replace("`", "``")
    if doubled.startswith("`") or doubled.endswith("`") or (doubled.startswith(" ") and doubled.endswith(" ")):
        return "` " + doubled + " `"
    return "`" + doubled + "`"


def _escape(text: str, *, starts_line: bool) -> str:
    """clangd's escaping of comment text, line by line, as clangd 22 computes it."""
    out: list[str] = []
    lines = text.split("\n")
    for number, line in enumerate(lines):
        first = starts_line if number == 0 else True
        lead = len(line) - len(line.lstrip(_SPACE))
        out.append(line[:lead])
        for i in range(lead, len(line)):
            # clangd passes Line.substr(lead, i) as what precedes the character: from the first
            # non-space, i characters (not i - lead); reproduced as is.
            before = line[lead : lead + i]
            if _needs_escape(line[i], before, line[i + 1 :], first):
                out.append("\\")
            out.append(line[i])
        if number + 1 < len(lines):
            out.append("\n")
    return "".join(out)


def _needs_escape(c: str, before: str, after: str, starts_line: bool) -> bool:
    """Whether clangd escapes `c` (needsLeadingEscapePlaintext in Markup.cpp)."""
    line_start = starts_line and before == ""

    def ruler_length() -> int:
        rest = after.rstrip(_SPACE)
        return 1 + len(rest) if line_start and all(d == c for d in rest) else 0

    def is_bullet() -> bool:
        return line_start and (after == "" or after.startswith(" "))

    def space_surrounds() -> bool:
        return (after == "" or after[0] in _SPACE) and (before == "" or before[-1] in _SPACE)

    def word_surrounds() -> bool:
        return after != "" and _alnum(after[0]) and before != "" and _alnum(before[-1])

    if c in "\\`":
        return True
    if c == "~":
        return line_start and after.startswith("~~")
    if c == "#":
        rest = after.lstrip("#")
        return line_start and (rest == "" or rest.startswith(" "))
    if c == "]":
        return after.startswith((":", "("))
    if c == "=":
        return ruler_length() > 0
    if c == "_":
        return ruler_length() >= 3 or not (space_surrounds() or word_surrounds())
    if c == "-":
        return ruler_length() > 0 or is_bullet()
    if c == "+":
        return is_bullet()
    if c == "*":
        return is_bullet() or ruler_length() >= 3 or not space_surrounds()
    if c in "<&":
        return _html_escape(c, after)
    if c == ">":
        return line_start
    if c in ".)":
        return starts_line and before != "" and all(d.isdigit() and d.isascii() for d in before) and after[:1] == " "
    return False


def _alnum(c: str) -> bool:
    return c.isascii() and c.isalnum()


def _html_escape(c: str, after: str) -> bool:
    """'<' that may open an HTML tag, '&' that may start an entity."""
    if c == "<":
        return _looks_like_tag(after)
    end = after.find(";")
    if end < 0:
        return False
    content = after[:end]
    if content.startswith("#"):
        content = content[1:]
        if content[:1] in ("x", "X"):
            return all(d in "0123456789abcdefABCDEF" for d in content[1:])
        return all(d in "0123456789" for d in content)
    return all(d.isascii() and d.isalpha() for d in content)


def _looks_like_tag(contents: str) -> bool:
    if contents == "":
        return False
    if contents[0] in "!?/":
        return True
    if not (contents[0].isascii() and contents[0].isalpha()):
        return False
    i = 0
    while i < len(contents) and (_alnum(contents[i]) or contents[i] in "-_:"):
        i += 1
    while i < len(contents) and contents[i] in _SPACE:
        i += 1
    for j in range(i, len(contents)):
        ch = contents[j]
        if _alnum(ch) or ch in _SPACE:
            continue
        return ch == ">" or contents.startswith("/>", j) or ch == "="
    return True


# -- plaintext rendering ----------------------------------------------------------------------


def _inline(text: str, *, keep: bool) -> list[_Chunk]:
    """Chunks of one of clangd's own paragraphs (escaped text, code spans without `keep`)."""
    chunks = _read_escaped(text) or [text]
    return [_Code(c.contents, keep) if isinstance(c, _Code) else c for c in chunks]


def _paragraph(chunks: list[_Chunk]) -> str:
    """A paragraph in plaintext (Markup.cpp Paragraph::renderPlainText), with its blank line."""
    text: list[str] = []
    space = False
    for chunk in chunks:
        if isinstance(chunk, _Code):
            marker = _marker(chunk.contents) if chunk.keep else ""
            text.append((" " if space else "") + marker + chunk.contents + marker)
            space = False
        else:
            text.append((" " if space else "") + chunk)
            space = chunk != "" and chunk[-1] in _SPACE
    return _plaintext_lines("".join(text)) + "\n\n"


def _marker(code: str) -> str:
    return next((m for m in ("`", "'", '"') if m not in code), "`")


def _plaintext_lines(text: str) -> str:
    """Lines joined with a space unless clangd sees a line break (renderNewlinesPlaintext)."""
    out: list[str] = []
    lines = text.strip(_SPACE).split("\n")
    for k, raw in enumerate(lines):
        line = raw.lstrip(_SPACE)
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
    stripped = line.rstrip(_SPACE)
    if stripped != "" and stripped[-1] in _PUNCTUATION:
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
    return re.sub(r"\n{3,}", "\n\n", text.strip(_SPACE))
