"""Position encodings: what a server chose, what each client is told, and the unit arithmetic.

The daemon offers every server UTF-16 only (adapters/encodings.py) and tells
every client UTF-16, the one encoding all clients must support, so requests
and results pass through untranslated. What the server actually announced is
still what the daemon's own document arithmetic uses: a server that chose
another encoding anyway gets every client edit translated into it, so its
copy of a document and the daemon's never diverge.
"""

from __future__ import annotations

import logging
from typing import Any

log = logging.getLogger(__name__)

UTF8, UTF16, UTF32 = "utf-8", "utf-16", "utf-32"
SUPPORTED = frozenset({UTF8, UTF16, UTF32})
# LSP's default when a server announces nothing, and what every client is told.
DEFAULT_ENCODING = UTF16
ANNOUNCED_ENCODING = UTF16


def negotiated_encoding(result: Any) -> str:
    """The encoding a server's InitializeResult chose (3.17 field, else clangd's extension)."""
    if not isinstance(result, dict):
        return DEFAULT_ENCODING
    caps = result.get("capabilities")
    chosen = caps.get("positionEncoding") if isinstance(caps, dict) else None
    if chosen is None:
        chosen = result.get("offsetEncoding")
    if chosen is None:
        return DEFAULT_ENCODING
    name = str(chosen).lower()
    if name not in SUPPORTED:
        log.warning("server announced unknown position encoding %r; assuming %s", chosen, DEFAULT_ENCODING)
        return DEFAULT_ENCODING
    return name


def announce(result: dict[str, Any], client_caps: dict[str, Any]) -> dict[str, Any]:
    """`result` telling one client its encoding, in every field that client may read."""
    shaped = dict(result)
    caps = dict(shaped.get("capabilities") or {})
    caps["positionEncoding"] = ANNOUNCED_ENCODING
    shaped["capabilities"] = caps
    if "offsetEncoding" in client_caps:
        # clangd's extension: a client that offered it reads the answer here.
        shaped["offsetEncoding"] = ANNOUNCED_ENCODING
    else:
        shaped.pop("offsetEncoding", None)
    return shaped


def client_encoding(client_caps: dict[str, Any]) -> str:
    """The encoding a client was told, and so speaks in everything it sends."""
    return ANNOUNCED_ENCODING


def width(ch: str, encoding: str) -> int:
    """Code units of one code point in `encoding`."""
    code = ord(ch)
    if encoding == UTF16:
        return 2 if code > 0xFFFF else 1
    if encoding == UTF8:
        return 1 if code < 0x80 else 2 if code < 0x800 else 3 if code < 0x10000 else 4
    return 1


def units(text: str, encoding: str) -> int:
    """Code units of `text` in `encoding`."""
    if encoding == UTF32 or text.isascii():
        return len(text)
    return sum(width(ch, encoding) for ch in text)


def index_at(line: str, character: int, encoding: str) -> tuple[int, bool]:
    """Code-point index of a `character` offset into `line`; flag if it had to be clamped.

    An offset inside a code point moves to its end; one past the line's end
    means the end (as the specification says), flagged either way.
    """
    if encoding == UTF32 or line.isascii():
        return (character, False) if character <= len(line) else (len(line), True)
    count = 0
    for idx, ch in enumerate(line):
        if count >= character:
            return idx, count != character
        count += width(ch, encoding)
    return len(line), count != character
