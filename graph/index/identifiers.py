"""Identifier splitting shared by FTS5 documents and FTS5 queries.

FTS5's tokenizer keeps `backoff_send` whole (we declare `_` a token character) and
knows nothing of camelCase, so both sides are expanded here: every identifier is
kept as written and followed by its parts, so `backoff send`, `backoffSend` and
`backoff_send` all meet on the words `backoff` and `send`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

# A word is anything FTS5's unicode61 tokenizer (with tokenchars '_') keeps together.
_WORD = re.compile(r"\w+")
# Acronym before a capitalised word (HTTPServer -> HTTP, Server), capitalised or lower
# words with trailing digits (utf8Decode -> utf8, Decode), bare acronyms, bare numbers.
_PART = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+\d*|[A-Z]+\d*|\d+")
_MAX_QUERY_TERMS = 64
# What a write "mentions" (graph/index/sqlite/learned.py forgets learned symbols by it).
_MENTION = re.compile(r"[A-Za-z_]\w*")


def called_without_name(name: str, kind: str) -> bool:
    """Whether callers may invoke the symbol without spelling its name (`Cls()`, `a + b`).

    Learned relations of such a symbol are forgotten when a write mentions its class's name
    instead (graph/index/sqlite/learned.py, postgres/contents/learned.py, team/side_learned.py).
    """
    return (name.startswith("__") and name.endswith("__")) or kind in ("constructor", "operator")


def split_identifier(word: str) -> list[str]:
    """Split one identifier into lower-case parts on `_`, `.`, `::` and case changes."""
    parts: list[str] = []
    for piece in re.split(r"[^0-9A-Za-z]+", word):
        parts.extend(p.lower() for p in _PART.findall(piece))
    return parts


def _expand(word: str) -> Iterator[str]:
    yield word.lower()
    parts = split_identifier(word)
    if len(parts) > 1 or (parts and parts[0] != word.lower()):
        yield from parts


def fts_terms(text: str) -> Iterator[str]:
    """Every word of text as written (lower-cased), each followed by its identifier parts."""
    for match in _WORD.finditer(text):
        yield from _expand(match.group())


def fts_document(text: str) -> str:
    """The FTS5 column value for text: words and their parts, space separated."""
    return " ".join(fts_terms(text))


def fts_names(names: Iterable[str]) -> str:
    """The FTS5 value for name-like strings such as `Uploader.backoff_send` or a path."""
    terms: list[str] = []
    for name in names:
        terms.extend(fts_terms(name))
    return " ".join(terms)


def fts_match_query(query: str) -> str | None:
    """A syntax-safe FTS5 MATCH expression OR-ing the query's terms, or None if it has none."""
    seen: dict[str, None] = {}
    for term in fts_terms(query):
        seen.setdefault(term, None)
        if len(seen) >= _MAX_QUERY_TERMS:
            break
    if not seen:
        return None
    # Quoting makes every term a plain string token, so operators such as AND, NEAR
    # or `-` typed by the user are just words.
    return " OR ".join('"' + term.replace('"', '""') + '"' for term in seen)


def mentions(text: str) -> frozenset[str]:
    """The identifiers a file's text spells."""
    return frozenset(_MENTION.findall(text))
