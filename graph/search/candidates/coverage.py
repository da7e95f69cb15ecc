"""How much of a query the keyword side's best hits contain: the share of the query's words found.

A docstring-like question ("Return the response headers as a dict") usually shares most of
its words with the code it describes; a web-style question ("python check file is
readonly") often shares one, and then BM25's first places are matches on that one word.
FusionWeights.coverage scales the keyword side by this share (to that power), so a keyword
list that matched little of the query counts for little.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from lensmux.graph.index.identifiers import fts_terms

__all__ = ["coverage", "word_found"]


def word_found(terms: Sequence[str], tokens: set[str]) -> bool:
    """Whether one query word (its FTS terms; prefix terms end in `*`) is among the tokens."""
    for term in terms:
        bare = term.strip('"').replace('""', '"')
        if term.endswith("*"):
            stem = term[:-1].strip('"')
            if any(token.startswith(stem) for token in tokens):
                return True
        elif bare in tokens:
            return True
    return False


def coverage(words: Sequence[Sequence[str]], texts: Iterable[str]) -> float:
    """The best share, over texts, of query words (each a group of FTS terms) one text contains."""
    if not words:
        return 0.0
    best = 0.0
    for text in texts:
        tokens = set(fts_terms(text))
        share = sum(1 for terms in words if word_found(terms, tokens)) / len(words)
        best = max(best, share)
        if best >= 1.0:
            break
    return best
