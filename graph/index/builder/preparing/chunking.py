"""A file's text to the chunks that get embedded, cut along its symbols (document_symbols.py).

One chunk per function and method; a class gets one chunk of its outline (header,
fields, docstring, member signatures, capped) while its methods get their own; code
outside any of those (imports, globals, macros) becomes a `module` outline chunk.
The first line of a chunk names it (`# language path kind Qualified.name`); a symbol's
chunk adds a line of plain words, its name and enclosing class split into words and the
words of its file's path (`make response flask app`): the embedding model reads words,
and `BrotliEncoderCompress` or `make_response` are one odd token run to it otherwise.
Anything longer than a window is split into overlapping line windows, and files no
server covers become plain line windows, so every line of a file is in some chunk.
A window over `max_chunk_tokens` is halved until it fits (a single line is cut), very
long lines are cut in the chunk text, and a file gives at most `max_file_chunks` chunks:
the model reads only its window anyway, and one generated file must not fill the index.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from lensmux.graph.index.builder.preparing.document_symbols import (
    CHUNKED_KINDS,
    TYPE_KINDS,
    ParsedSymbol,
    within_callable,
)
from lensmux.graph.index.identifiers import split_identifier

log = logging.getLogger(__name__)

# Bumped whenever the text a chunk is embedded from changes: vectors of another version are
# not comparable, so an index made with another version is rebuilt (part of its model id).
CHUNK_TEXT_VERSION = 2

_LINE_BREAK = re.compile(r"\r\n|\r|\n")


@dataclass(frozen=True, slots=True)
class ChunkDraft:
    """A chunk before it has an id; symbol is an index into the file's symbol list."""

    kind: str
    name: str
    symbol: int | None
    start_line: int
    end_line: int  # inclusive
    text: str


@dataclass(frozen=True, slots=True)
class ChunkConfig:
    """Window sizes in lines, and the caps on a chunk's and a file's size."""

    window_lines: int = 60
    window_overlap: int = 10
    class_max_lines: int = 60
    # About twice the embedding window (256 tokens): later tokens are not embedded,
    # only keyword-indexed, so a bigger chunk buys nothing but noise.
    max_chunk_tokens: int = 512
    max_line_chars: int = 1000
    max_file_chunks: int = 400


Measure = Callable[[str], int]


def split_lines(text: str) -> list[str]:
    """Split like LSP does (\\n, \\r\\n, \\r), unlike str.splitlines which also splits on \\f etc."""
    return _LINE_BREAK.split(text)


def chunk_file(
    rel_path: str,
    language: str,
    text: str,
    symbols: Sequence[ParsedSymbol] | None,
    config: ChunkConfig = ChunkConfig(),
    *,
    measure: Measure | None = None,
) -> list[ChunkDraft]:
    """The chunks of one file; symbols None means no server covers it (plain windows).

    measure counts a text's tokens; without it chunks are capped by lines and characters only.
    """
    chunks = _chunk_file(rel_path, language, text, symbols, _Sizer(config, measure))
    if len(chunks) > config.max_file_chunks:
        log.info("%s: keeping the first %d of its %d chunks", rel_path, config.max_file_chunks, len(chunks))
        del chunks[config.max_file_chunks :]
    return chunks


@dataclass(frozen=True, slots=True)
class _Sizer:
    config: ChunkConfig
    measure: Measure | None


def _chunk_file(
    rel_path: str, language: str, text: str, symbols: Sequence[ParsedSymbol] | None, sizer: _Sizer
) -> list[ChunkDraft]:
    config = sizer.config
    lines = [line[: config.max_line_chars] for line in split_lines(text)]
    last = len(lines) - 1
    header = f"# {language} {rel_path}"
    if symbols is None:
        entries = list(enumerate(lines))
        return _window_chunks(header, entries, sizer, kind="file", name=rel_path)
    # Functions and classes nested in a function are part of that function's chunk.
    chunked = [i for i, s in enumerate(symbols) if s.kind in CHUNKED_KINDS and not within_callable(symbols, s.parent)]
    owner = {i: _chunked_ancestor(symbols, i) for i in chunked}
    chunks: list[ChunkDraft] = []
    outlined: set[int] = set()  # lines already shown whole in some class outline chunk
    for i in chunked:  # parents come before their members
        sym = symbols[i]
        first = min(sym.range.start_line, last)
        final = min(max(sym.range.last_line, first), last)
        if sym.kind in TYPE_KINDS:
            members = [symbols[j] for j in chunked if owner[j] == i]
            entries, _ = _outline(lines, first, final, members)
            entries = entries[: config.class_max_lines]
            outlined.update(ln for ln, _ in entries)
            chunks.extend(_window_chunks(header, entries, sizer, kind=sym.kind, name=sym.qualified_name, symbol=i))
        elif first == final and first in outlined:
            # A one-line member (C++ declaration, inline constructor) is all in its class
            # chunk already; a chunk of its own would only add a near-duplicate.
            continue
        else:
            entries = [(ln, lines[ln]) for ln in range(first, final + 1)]
            signature = lines[min(sym.selection_range.start_line, last)]
            chunks.extend(
                _window_chunks(
                    header, entries, sizer, kind=sym.kind, name=sym.qualified_name, symbol=i, signature=signature
                )
            )
    top = [symbols[j] for j in chunked if owner[j] is None]
    entries, signature_lines = _outline(lines, 0, last, top)
    if any(line.strip() for ln, line in entries if ln not in signature_lines):
        chunks.extend(_window_chunks(header, entries, sizer, kind="module", name=rel_path))
    return chunks


def _chunked_ancestor(symbols: Sequence[ParsedSymbol], index: int) -> int | None:
    parent = symbols[index].parent
    while parent is not None and symbols[parent].kind not in CHUNKED_KINDS:
        parent = symbols[parent].parent
    return parent


def _outline(
    lines: Sequence[str], first: int, final: int, members: Sequence[ParsedSymbol]
) -> tuple[list[tuple[int, str]], set[int]]:
    """Lines first..final with each member's body dropped but its signature line(s) kept."""
    dropped: set[int] = set()
    signature: set[int] = set()
    for member in members:
        start = member.range.start_line
        keep_to = max(start, min(member.selection_range.end_line, member.range.last_line))
        signature.update(range(start, keep_to + 1))
        dropped.update(range(keep_to + 1, member.range.last_line + 1))
    entries = [(ln, lines[ln]) for ln in range(first, final + 1) if ln not in dropped]
    return entries, signature


def _window_chunks(
    header: str,
    entries: Sequence[tuple[int, str]],
    sizer: _Sizer,
    *,
    kind: str,
    name: str,
    symbol: int | None = None,
    signature: str | None = None,
) -> list[ChunkDraft]:
    config = sizer.config
    size = max(1, config.window_lines)
    step = max(1, size - max(0, config.window_overlap))
    head = f"{header} {kind} {name}"
    words = name_words(name, header.split(" ", 2)[-1]) if symbol is not None else None
    measured = head if words is None else f"{head}\n{words}"
    windows: list[Sequence[tuple[int, str]]] = []
    for start in range(0, max(len(entries), 1), step):
        window = _trim_blank(entries[start : start + size])
        if window:
            windows.extend(_fit(measured, window, sizer, signature))
        if start + size >= len(entries):
            break
    chunks: list[ChunkDraft] = []
    for number, window in enumerate(windows, 1):
        part = head
        body = [line for _, line in window]
        if len(windows) > 1:
            part += f" (part {number}/{len(windows)})"
            # Later parts repeat the signature so every window carries the symbol's name.
            if number > 1 and signature is not None:
                body.insert(0, signature)
        if words is not None:
            body.insert(0, words)
        text = part + "\n" + "\n".join(body)
        chunks.append(ChunkDraft(kind, name, symbol, window[0][0], window[-1][0], text))
    return chunks


def _fit(
    head: str, window: Sequence[tuple[int, str]], sizer: _Sizer, signature: str | None
) -> list[Sequence[tuple[int, str]]]:
    """The window, halved by lines until each piece is within max_chunk_tokens."""
    measure, limit = sizer.measure, sizer.config.max_chunk_tokens
    if measure is None:
        return [window]
    lead = [head] if signature is None else [head, signature]
    tokens = measure("\n".join([*lead, *(line for _, line in window)]))
    if tokens <= limit:
        return [window]
    if len(window) == 1:
        ((number, line),) = window
        # One line alone is too long: keep the share of it that fits.
        keep = max(1, len(line) * limit // (tokens + 1))
        while keep > 1 and measure("\n".join([*lead, line[:keep]])) > limit:
            keep //= 2
        return [[(number, line[:keep])]]
    middle = len(window) // 2
    halves = (_trim_blank(window[:middle]), _trim_blank(window[middle:]))
    return [piece for half in halves if half for piece in _fit(head, half, sizer, signature)]


def name_words(qualified_name: str, rel_path: str) -> str:
    """A symbol's name, enclosing class and file path as plain lower-case words, each once."""
    stem = rel_path.rsplit(".", 1)[0]
    words = split_identifier(qualified_name) + split_identifier(stem)
    return " ".join(dict.fromkeys(w for w in words if not w.isdigit()))


def _trim_blank(window: Sequence[tuple[int, str]]) -> Sequence[tuple[int, str]]:
    start, end = 0, len(window)
    while start < end and not window[start][1].strip():
        start += 1
    while end > start and not window[end - 1][1].strip():
        end -= 1
    return window[start:end]
