"""pyright's hover in plaintext, rebuilt from the markdown the shared pyright answers.

pyright builds a hover from parts (languageService/hoverProvider.ts): the signature or
type of what is hovered ("python" parts), raw text (a parameter's line of the function's
docstring, a TypedDict entry's separator), and the docstring. In markdown a python part
is a ```python fence and the docstring follows a `---` line, converted to markdown
(analyzer/docStringConversion.ts); in plaintext a python part is its text and a blank
line, and the docstring is the docstring itself, dedented, runs of blank lines made one
(convertDocStringToPlainText).

The python parts and the raw text come back exactly. The docstring's markdown conversion
loses information, so it is read back rule by rule; what cannot be read back is
assumed to have been the common case:

- exact: `\\_ \\* \\~ \\[ \\]` escapes, `&lt;`/`&gt;`, `&nbsp;` indentation, the two
  spaces of a forced line break, a line pyright wrote without the indentation it shares
  with the line before, fences pyright put around doctests and `::` literal blocks;
- assumed: single backticks (reST ``literal`` and `:role:` prefixes are lost), a doctest
  not indented, "- " items indented twice what markdown shows (pyright halves four or
  more), a list item's continuation lines indented two past its marker, a star item at
  column 0, escapes and entities not written in the docstring itself;
- lost: reST directives (`.. note::` and their blocks), tables and the `~`/`+`/spaced
  underlines pyright rewrites, the blank line pyright adds before `@` lines.
"""

from __future__ import annotations

import re

_PYTHON = "```python\n"
_PYTHON_END = "\n```\n"
_SEPARATOR = "---\n"
# What follows a TypedDict entry's docstring when the next entry of the same key follows.
_NEXT_ENTRY = "\n\n---\n```python\n"
_FENCE = re.compile(r"^(```|~~~)(\w*)$")
_DOCTEST = re.compile(r" *>>> ")
_NBSP = "&nbsp;"
_ESCAPED = re.compile(r"\\([_*~\[\]])")
# pyright leaves markdown links as they are: `[text](target)`, greedy, first `[` to last `)`.
_LINK = re.compile(r"((?<!\\)\[.*\]\(.*\))")
_LIST_ITEM = re.compile(r"^\s*([-*]|\d+\.)\s")
# Items after which pyright stays in its list state (numbered ones do not start it).
_BULLET = re.compile(r"^(\s*)[-*]\s")
_HALVED_ITEM = re.compile(r"^( {2,})- ")


def plaintext_hover(markdown: str) -> str | None:
    """The plaintext pyright gives a client without markdown, from its markdown hover; None if not pyright's."""
    parts = _parts(markdown)
    if parts is None:
        return None
    out = []
    for kind, text in parts:
        if kind == "python":
            out.append(text + "\n\n")
        elif kind == "doc":
            out.append(_docstring(text))
        else:
            out.append(text)
    return "".join(out).rstrip()


def plaintext_docstring(markdown: str) -> str:
    """A docstring as convertDocStringToPlainText gives it, from convertDocStringToMarkdown's markdown."""
    return _docstring(markdown)


def _parts(markdown: str) -> list[tuple[str, str]] | None:
    """("python" | "text" | "doc", text) in order."""
    out: list[tuple[str, str]] = []
    i = 0
    after_python = False
    while i < len(markdown):
        if markdown.startswith(_PYTHON, i):
            end = markdown.find(_PYTHON_END, i + len(_PYTHON))
            if end < 0:
                if not markdown.endswith("\n```"):
                    return None
                out.append(("python", markdown[i + len(_PYTHON) : -4]))
                return out
            out.append(("python", markdown[i + len(_PYTHON) : end]))
            i = end + len(_PYTHON_END)
            after_python = True
            continue
        rest = markdown[i:]
        if after_python and rest.startswith(_SEPARATOR):
            i += len(_SEPARATOR)
        elif rest.startswith("\n\n" + _SEPARATOR):
            out.append(("text", "\n\n" + _SEPARATOR))  # between TypedDict entries, in both formats
            i += 2 + len(_SEPARATOR)
            after_python = False
            continue
        else:
            # Raw text (a parameter's docstring line), then perhaps the docstring after its separator.
            end = rest.find("\n\n" + _SEPARATOR)
            if end < 0:
                out.append(("text", rest))
                return out
            out.append(("text", rest[:end]))
            i += end + 2 + len(_SEPARATOR)
        end = markdown.find(_NEXT_ENTRY, i)
        doc = markdown[i:] if end < 0 else markdown[i:end]
        out.append(("doc", doc))
        i += len(doc)
        after_python = False
    return out


def _docstring(markdown: str) -> str:
    """The docstring as convertDocStringToPlainText gives it, read back from its markdown."""
    lines = _docstring_lines(markdown.split("\n"))
    out: list[str] = []
    for line in lines:
        if line.strip() == "" and (not out or out[-1].strip() == ""):
            continue
        out.append(line)
    return "\n".join(out).rstrip()


def _docstring_lines(md: list[str]) -> list[str]:
    raw: list[str] = []
    in_code = False  # an inline code span pyright carries from line to line
    previous: str | None = None  # the previous markdown line of text, None after a blank or block
    list_indent: int | None = None
    i = 0
    while i < len(md):
        line = md[i]
        fence = _FENCE.match(line)
        close = next((j for j in range(i + 1, len(md)) if md[j] == fence.group(1)), None) if fence else None
        if fence is not None and close is not None:
            raw += _block(fence.group(2), line, md[i + 1 : close], md[close], raw)
            i = close + 1
            previous, list_indent, in_code = None, None, False
            continue
        i += 1
        if line == "":
            raw.append("")
            previous, list_indent = None, None
            continue
        text = _indented(line, previous, raw, list_indent)
        bullet = _BULLET.match(text)
        if bullet is not None:
            list_indent = len(bullet.group(1))
        text, in_code = _unescaped(text, in_code)
        raw.append(text)
        previous = line
    if previous is not None and raw[-1].endswith("`") and raw[-1].count("`") % 2 == 1:
        # pyright closes an inline code span still open at the end of the docstring.
        raw[-1] = raw[-1][:-1]
    return raw


def _block(language: str, opening: str, contents: list[str], closing: str, raw: list[str]) -> list[str]:
    """The docstring lines of a fenced block of pyright's markdown."""
    written = [line for line in raw if line.strip()]
    before = written[-1] if written else ""
    if language == "" and contents and contents[0][:1] not in ("", " ") and _DOCTEST.match(contents[0]):
        return contents  # a doctest pyright fenced (and dedented: assumed at column 0)
    if language == "" and before.endswith(":") and contents and all(c == "" or c[0] == " " for c in contents):
        # A literal block: pyright wrote its "::" as ":" and fenced the indented lines.
        for k in range(len(raw) - 1, -1, -1):
            if raw[k].strip():
                raw[k] += ":"
                break
        return contents
    return [opening, *contents, closing]


def _indented(line: str, previous: str | None, raw: list[str], list_indent: int | None) -> str:
    """A markdown line of text with the docstring's indentation and without a forced break."""
    text = line[:-2] if line.endswith("  ") else line
    count = 0
    while text.startswith(_NBSP):
        text = text[len(_NBSP) :]
        count += 1
    if count:
        return " " * count + text
    if text.startswith(" * "):
        return text[1:]  # pyright indents a star item at column 0 by one space
    halved = _HALVED_ITEM.match(text)
    if halved is not None:
        return " " * (2 * len(halved.group(1))) + text.lstrip(" ")
    if text.startswith(" ") or previous is None:
        return text
    if list_indent is not None and _LIST_ITEM.match(text) is None:
        return " " * (list_indent + 2) + text  # a list item's continuation, dedented by pyright
    before = raw[-1] if raw else ""
    indent = len(before) - len(before.lstrip(" "))
    if not previous.endswith("  ") and indent > 0:
        # pyright trims a line indented as the one before unless it forced a break there.
        return " " * indent + text
    return text


def _unescaped(text: str, in_code: bool) -> tuple[str, bool]:
    """`text` without pyright's escapes outside inline code and links; whether code is still open after it."""
    out: list[str] = []
    for n, piece in enumerate(text.split("`")):
        if n > 0:
            in_code = not in_code
            out.append("`")
        if in_code:
            out.append(piece)
            continue
        for k, part in enumerate(_LINK.split(piece)):
            out.append(part if k % 2 else _ESCAPED.sub(r"\1", part).replace("&lt;", "<").replace("&gt;", ">"))
    return "".join(out), in_code
