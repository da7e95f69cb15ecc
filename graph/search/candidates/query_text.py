"""The query as the keyword side reads it: content words, split identifiers, prefix stems.

Keyword side: the index stores every identifier whole and split (`backoff_send backoff
send`), so the query is split the same way. On top of what the index's keyword_search
does, English function words are dropped (`how`, `the`, `is` match `is` operators and
comments, not intent) and plain words get prefix stems for inflections (`uploads` ->
`upload*` also finds `upload` and `uploader`; `retried` -> `retri*`, `retry*`; `runs`
-> `run*`), since the index has no stemmer and code text mixes `retry`, `retries`,
`retrying`. reST role markup (`:meth:` before a code span) is not a query word.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from lensmux.graph.index.identifiers import split_identifier

__all__ = ["STOP_WORDS", "WORD", "keyword_expression", "query_terms", "query_words"]

WORD = re.compile(r"\w+")
# reST role markup before a code span (:func:`x`, :py:meth:`x`): markup, not words of the query.
_ROLE = re.compile(r"(?::[\w.+-]+)+:(?=`)")
_MAX_TERMS = 64
_MIN_STEM = 3

_STOP_WORDS_TEXT = """a an the and or but nor of to in on at by for from with without into onto about over under
    as than then so such if else when where why how what which who whom whose while until
    is are was were be been being am do does did done doing has have had having
    can could should would will shall may might must
    it its it's this that these those there here i me my we us our you your he she they them their
    not no yes all any some each every both either neither also just only very more most much many
    please find show me give tell list where's what's how's"""
STOP_WORDS = frozenset(_STOP_WORDS_TEXT.split())


def _is_identifier(word: str) -> bool:
    """Whether a word is written like code (snake_case, camelCase, digits), not English."""
    return "_" in word or any(c.isdigit() for c in word) or (word != word.lower() and word != word.capitalize())


def _inflections(word: str) -> list[str]:
    """Prefix stems of an English word: `failed` -> [`fail`], `runs` -> [`run`], `retry` -> [`retry`, `retri`].

    [] if the word is too short to stem. Stems of three letters are allowed for the
    short verbs docstrings start with (`runs`, `gets`, `pops`, `used`, `added`);
    a doubled final consonant is undone (`running` -> `run`, `stopped` -> `stop`).
    """
    for suffix in ("ing", "ed", "es", "s"):
        if not word.endswith(suffix) or word.endswith(("ss", "us", "is")):
            continue
        stem = word[: -len(suffix)]
        if len(stem) < _MIN_STEM and suffix in ("ed", "es"):
            stem = word[:-1]  # used -> use, uses -> use
        if len(stem) < _MIN_STEM:
            continue
        if stem.endswith("i"):
            return [stem, stem[:-1] + "y"]  # retried, retries -> retri* and retry*
        if suffix in ("ing", "ed") and len(stem) > _MIN_STEM and stem[-1] == stem[-2] and stem[-1] not in "aeiouls":
            return [stem[:-1]]  # running -> run, stopped -> stop (but not falling -> fal)
        return [stem]
    if len(word) < _MIN_STEM + 1:
        return []
    if word.endswith("y"):
        return [word, word[:-1] + "i"]  # retri*: retries, retried
    return [word]


def query_words(query: str) -> list[list[str]]:
    """Per content word of the query, its FTS5 terms (quoted; prefix terms end in `*`)."""
    words = WORD.findall(_ROLE.sub(" ", query))
    content = [w for w in words if w.lower() not in STOP_WORDS or _is_identifier(w)]
    out: list[list[str]] = []
    for word in content or words:  # a query of only stop words still searches for them
        lower = word.lower()
        parts = split_identifier(word)
        if len(parts) > 1 or (parts and parts[0] != lower) or not lower.isalpha():
            out.append([_quote(lower), *(_quote(p) for p in parts)])
            continue
        stems = _inflections(lower)
        terms = [] if any(lower.startswith(stem) for stem in stems) else [_quote(lower)]
        out.append(terms + [_quote(stem) + "*" for stem in stems])
    return out


def query_terms(query: str) -> Iterator[str]:
    """FTS5 terms (quoted, prefix terms end in `*`) for the query, duplicates included."""
    for terms in query_words(query):
        yield from terms


def _quote(term: str) -> str:
    return '"' + term.replace('"', '""') + '"'


def keyword_expression(query: str) -> str | None:
    """An FTS5 MATCH expression OR-ing the query's terms, or None when it has none."""
    seen: dict[str, None] = {}
    for term in query_terms(query):
        seen.setdefault(term, None)
        if len(seen) >= _MAX_TERMS:
            break
    return " OR ".join(seen) if seen else None
