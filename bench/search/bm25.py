"""The baseline every project is measured against: a good BM25 over perfect function chunks.

"Perfect" chunks: one document per function or method of the stripped copy, cut
exactly at its definition (Python: `ast`; C: c_strip.c_functions), nothing else
(no files, windows, classes), so the baseline never loses on chunking. A
document is its path and its text; tokens are lower-cased words with identifiers
kept whole and split (`read_file` -> `read_file read file`, `BrotliEncode` ->
`brotliencode brotli encode`), English stop words dropped and a light suffix
stemmer applied to query and documents alike. Okapi BM25, k1 = 1.2, b = 0.75.
"""

from __future__ import annotations

import ast
import math
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from bench.search.c_strip import c_functions
from lensmux.graph.index.identifiers import split_identifier
from lensmux.graph.search.candidates.seeds import STOP_WORDS

__all__ = ["Bm25", "Document", "function_documents", "python_documents", "tokens"]

K1 = 1.2
B = 0.75
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|\d+")
_C_SUFFIXES = (".c", ".h", ".cc", ".cpp", ".hpp")


def _stem(word: str) -> str:
    for suffix in ("ations", "ation", "ings", "ing", "ies", "ied", "ed", "es", "ly", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3 and not word.endswith(("ss", "us", "is")):
            stem = word[: -len(suffix)]
            return stem + "y" if suffix in ("ies", "ied") else stem
    return word


def tokens(text: str) -> list[str]:
    """BM25 terms of a text: identifiers whole and split, stop words out, stemmed."""
    out: list[str] = []
    for word in _WORD.findall(text):
        lower = word.lower()
        parts = split_identifier(word)
        for term in {lower, *parts} if len(parts) > 1 else {lower}:
            if term not in STOP_WORDS and len(term) > 1:
                out.append(_stem(term))
    return out


@dataclass(frozen=True, slots=True)
class Document:
    """One function: where it is (0-based start line) and its text."""

    path: str
    line: int
    text: str


class Bm25:
    """Okapi BM25 over a fixed set of documents."""

    def __init__(self, documents: Sequence[Document], cache: dict[str, Counter[str]] | None = None) -> None:
        """`cache` keeps each document's term counts by its path and text, for indexes built again and again."""
        self.documents = list(documents)
        self._tf = [_term_counts(d.path + "\n" + d.text, cache) for d in self.documents]
        self._len = [sum(tf.values()) for tf in self._tf]
        self._avg = sum(self._len) / max(1, len(self._len))
        df: Counter[str] = Counter()
        for tf in self._tf:
            df.update(tf.keys())
        n = len(self.documents)
        self._idf = {t: math.log(1 + (n - f + 0.5) / (f + 0.5)) for t, f in df.items()}
        self._postings: dict[str, list[int]] = {}
        for i, tf in enumerate(self._tf):
            for term in tf:
                self._postings.setdefault(term, []).append(i)

    def search(self, query: str, k: int = 10) -> list[tuple[str, int]]:
        """The k best documents as (path, start line)."""
        scores: dict[int, float] = {}
        for term in set(tokens(query)):
            idf = self._idf.get(term)
            if idf is None:
                continue
            for i in self._postings[term]:
                f = self._tf[i][term]
                norm = f * (K1 + 1) / (f + K1 * (1 - B + B * self._len[i] / self._avg))
                scores[i] = scores.get(i, 0.0) + idf * norm
        best = sorted(scores, key=lambda i: (-scores[i], i))[:k]
        return [(self.documents[i].path, self.documents[i].line) for i in best]


def _term_counts(text: str, cache: dict[str, Counter[str]] | None) -> Counter[str]:
    if cache is None:
        return Counter(tokens(text))
    counts = cache.get(text)
    if counts is None:
        counts = cache[text] = Counter(tokens(text))
    return counts


def _python_functions(rel: str, source: str) -> Iterable[Document]:
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return
    lines = source.splitlines()

    def visit(node: ast.AST, in_function: bool) -> Iterable[Document]:
        for child in ast.iter_child_nodes(node):
            is_function = isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef)
            if is_function and not in_function:
                assert isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef)
                first = min([d.lineno for d in child.decorator_list] + [child.lineno]) - 1
                end = child.end_lineno or child.lineno
                yield Document(rel, first, "\n".join(lines[first:end]))
            yield from visit(child, in_function or is_function)

    yield from visit(tree, False)


def python_documents(rel: str, source: str) -> list[Document]:
    """The functions of one Python file, one document each."""
    return list(_python_functions(rel, source))


def function_documents(root: Path) -> list[Document]:
    """Every function of a tree (Python and C/C++ files), one document each."""
    out: list[Document] = []
    for path in sorted(p for p in root.rglob("*") if p.is_file() and not any(x == ".git" for x in p.parts)):
        rel = path.relative_to(root).as_posix()
        if path.suffix == ".py":
            out.extend(_python_functions(rel, path.read_text(encoding="utf-8", errors="replace")))
        elif path.suffix in _C_SUFFIXES:
            text = path.read_text(encoding="utf-8", errors="replace")
            lines = text.split("\n")
            for first, end in c_functions(text):
                out.append(Document(rel, first, "\n".join(lines[first : end + 1])))
    return out
