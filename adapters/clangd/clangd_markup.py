"""clangd's markdown of a comment: how clangd 22 escapes and breaks it, and how to read it back.

clangd renders the paragraphs of a declaration's comment into markdown (support/Markup.cpp):
under the default `Documentation.CommentFormat` (Plaintext) every backslash and every
character that could start markdown is escaped with a backslash (renderEscapedMarkdown),
under `CommentFormat: Markdown` only HTML tags and entities are (renderMarkdown); backtick
quoted code in the comment becomes a code span; and two spaces are added before a newline
after punctuation or before a line starting with `@` or `\\` (a forced markdown break).
`comment_texts` reads paragraphs back into clangd's chunks and keeps a reading only if
rendering it again gives the same markdown; escaping is injective, so the reading is unique.
"""

from __future__ import annotations

from dataclasses import dataclass

PUNCTUATION = ".:,;!?"
SPACE = " \t\n\v\f\r"
_MARKDOWN_BREAK_STARTS = "@\\"


@dataclass(frozen=True)
class Code:
    """An inline code span; `keep` spans (backticks in a comment) keep their backticks in plaintext."""

    contents: str
    keep: bool = False


Chunk = str | Code


def comment_texts(paragraphs: list[list[str]]) -> list[list[Chunk]] | None:
    """Each comment paragraph as clangd's chunks, read as escaped markdown, else as markdown comments."""
    for read, render in ((read_escaped, _render_escaped), (_read_markdown, _render_markdown)):
        out: list[list[Chunk]] = []
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
    stripped = line.rstrip(SPACE)
    nxt = following.lstrip(" \t")
    return (stripped != "" and stripped[-1] in PUNCTUATION) or (nxt != "" and nxt[0] in _MARKDOWN_BREAK_STARTS)


def read_escaped(text: str) -> list[Chunk] | None:
    """Chunks of a paragraph rendered with every markup character escaped: `\\x` is x, backticks delimit code."""
    chunks: list[Chunk] = []
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
            chunks.append(Code(contents, keep=True))
        else:
            buf.append(ch)
            i += 1
    if buf:
        chunks.append("".join(buf))
    return chunks


def _read_markdown(text: str) -> list[Chunk] | None:
    """A paragraph rendered as markdown comments: code spans as clangd found them, HTML tags and entities escaped.

    A section heading or a ruler is taken for `CommentFormat: Doxygen`'s layout, not read.
    """
    if text.startswith(("#", "**")) or text == "---":
        return None
    chunks: list[Chunk] = []
    for piece in _quoted_spans(text):
        if isinstance(piece, Code):
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


def _quoted_spans(text: str) -> list[Chunk]:
    """Text and backtick-quoted code, as clangd splits a comment paragraph (getBacktickQuoteRange)."""
    out: list[Chunk] = []
    rest = text
    i = 0
    while i < len(rest):
        if rest[i] == "`":
            end = _quote_end(rest, i)
            if end is not None:
                if i:
                    out.append(rest[:i])
                out.append(Code(rest[i + 1 : end], keep=True))
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
    if contents == "" or contents[0] in SPACE or contents[-1] in SPACE:
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


def _render_escaped(chunks: list[Chunk]) -> str:
    """clangd's escaped markdown of a comment paragraph (Markup.cpp renderEscapedMarkdown)."""
    out = []
    for k, chunk in enumerate(chunks):
        out.append(_inline_block(chunk.contents) if isinstance(chunk, Code) else _escape(chunk, starts_line=k == 0))
    return "".join(out)


def _render_markdown(chunks: list[Chunk]) -> str:
    """clangd's markdown of a comment paragraph under `CommentFormat: Markdown` (Markup.cpp renderMarkdown)."""
    out: list[str] = []
    for chunk in chunks:
        if isinstance(chunk, Code):
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
        lead = len(line) - len(line.lstrip(SPACE))
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
        rest = after.rstrip(SPACE)
        return 1 + len(rest) if line_start and all(d == c for d in rest) else 0

    def is_bullet() -> bool:
        return line_start and (after == "" or after.startswith(" "))

    def space_surrounds() -> bool:
        return (after == "" or after[0] in SPACE) and (before == "" or before[-1] in SPACE)

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
    while i < len(contents) and contents[i] in SPACE:
        i += 1
    for j in range(i, len(contents)):
        ch = contents[j]
        if _alnum(ch) or ch in SPACE:
            continue
        return ch == ">" or contents.startswith("/>", j) or ch == "="
    return True
