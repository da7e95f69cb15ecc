"""The keyword side of the team store: the same terms FTS5 indexes, and BM25 as FTS5 computes it.

The embedded store gives FTS5 three columns per chunk (names, path, body) whose values
graph/index/identifiers.py made: words and their identifier parts, space separated, which
FTS5's unicode61 tokenizer (remove_diacritics 2, `_` a token character) lower-cases and
folds. Here the same values are tokenized the same way in Python and stored as postings
(term, chunk, count per column, the chunk's token count), from which graph/index/postgres/
keyword.py computes FTS5's bm25() in SQL: k1 = 1.2, b = 0.75, a phrase's frequency in a row
is the sum of its column weights over its instances, the row's length is its tokens over
every column, avgdl the mean of that over the table, and IDF = ln((N - n + 0.5)/(n + 0.5))
clamped to 1e-6 when it is not positive (ext/fts5/fts5_aux.c, fts5Bm25Function).
PostgreSQL's own ts_rank is not BM25 and would rank differently (issue 24).
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass

from lensmux.graph.index.interface import KeywordTerm, keyword_terms

__all__ = ["Posting", "fold", "postings", "query_terms", "tokens"]

_TOKEN = re.compile(r"\w+")


def fold(word: str) -> str:
    """One token as unicode61 stores it: lower case, diacritics removed (remove_diacritics 2)."""
    if word.isascii():
        return word.lower()
    decomposed = unicodedata.normalize("NFD", word.lower())
    return unicodedata.normalize("NFC", "".join(c for c in decomposed if not unicodedata.combining(c)))


def tokens(value: str) -> Iterator[str]:
    """The tokens of one column value, as FTS5 splits and folds them."""
    for match in _TOKEN.finditer(value):
        yield fold(match.group())


@dataclass(frozen=True, slots=True)
class Posting:
    """One term of one chunk: its count in each column, and the chunk's length in tokens."""

    term: str
    names: int
    path: int
    body: int
    length: int


def postings(names: str, path: str, body: str) -> tuple[int, list[Posting]]:
    """The chunk's length in tokens and its postings, from the three FTS column values."""
    counts = [Counter(tokens(names)), Counter(tokens(path)), Counter(tokens(body))]
    length = sum(sum(c.values()) for c in counts)
    terms = sorted(set().union(*counts))
    return length, [Posting(t, counts[0][t], counts[1][t], counts[2][t], length) for t in terms]


def query_terms(expression: str) -> list[KeywordTerm]:
    """The expression's terms as the index holds them; a term FTS5 would read as several tokens is dropped.

    lensmux emits one word per term (graph/index/interface.py), so a multi-token phrase only
    comes from elsewhere; it is not supported rather than matched differently from FTS5.
    """
    out: dict[KeywordTerm, None] = {}
    for term in keyword_terms(expression):
        parts = list(tokens(term.text))
        if len(parts) == 1:
            out.setdefault(KeywordTerm(parts[0], term.prefix), None)
    return list(out)
