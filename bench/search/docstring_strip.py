"""Docstring stripping for the label-free search evaluation.

Every function and method docstring of a Python file is removed (class and module
docstrings stay: they are not queries). A docstring that sits on lines of its own
loses those lines; one that is the whole body becomes `...` at the same indentation;
one sharing a line with code is replaced by `...` in place. Source order of the
definitions is unchanged, so the n-th definition of the original is the n-th of the
copy, which is how an answer is located in the stripped file.

A query is the first sentence of a docstring. Trivial ones are skipped (fewer than
four words, or a first sentence under 20 characters), and so are functions nested in
functions: the index folds them into their parent's chunk, so no strategy can name them.
"""

from __future__ import annotations

import ast
import inspect
import re
from dataclasses import dataclass

__all__ = ["Definition", "StripFailed", "first_sentence", "is_trivial", "strip_docstrings"]

MIN_WORDS = 4
MIN_CHARS = 20
# A period after one of these does not end the sentence.
_ABBREVIATIONS = ("e.g", "i.e", "etc", "vs", "cf", "approx", "resp")
_SENTENCE_END = re.compile(r"[.!?](?=\s|$)")


class StripFailed(Exception):
    """The stripped source no longer parses or lost a definition (a bug here, not in the corpus)."""


@dataclass(frozen=True, slots=True)
class Definition:
    """One function or method of the stripped file; lines are 0-based."""

    qualname: str
    first_line: int  # the first decorator's line, else the `def` line
    def_line: int
    end_line: int
    nested: bool  # inside another function
    docstring: str | None  # as written in the original, cleaned


def first_sentence(docstring: str) -> str:
    """The first sentence of a docstring's first paragraph, on one line."""
    paragraph = inspect.cleandoc(docstring).split("\n\n", 1)[0]
    text = " ".join(paragraph.split())
    for match in _SENTENCE_END.finditer(text):
        before = text[: match.start()].rsplit(" ", 1)[-1].lower()
        if text[match.start()] == "." and before.rstrip(".") in _ABBREVIATIONS:
            continue
        return text[: match.end()]
    return text


def is_trivial(sentence: str) -> bool:
    """Too short to be a fair query."""
    return len(sentence.split()) < MIN_WORDS or len(sentence) < MIN_CHARS


def _functions(tree: ast.AST) -> list[tuple[ast.FunctionDef | ast.AsyncFunctionDef, str, bool]]:
    """(node, qualified name, nested in a function) in source order."""
    out: list[tuple[ast.FunctionDef | ast.AsyncFunctionDef, str, bool]] = []

    def visit(node: ast.AST, prefix: str, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                name = f"{prefix}{child.name}"
                out.append((child, name, in_function))
                visit(child, name + ".", True)
            elif isinstance(child, ast.ClassDef):
                visit(child, f"{prefix}{child.name}.", in_function)
            else:
                visit(child, prefix, in_function)

    visit(tree, "", False)
    return out


def _docstring_node(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> ast.Expr | None:
    first = fn.body[0] if fn.body else None
    if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
        return first
    return None


def _docstring(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> str | None:
    node = _docstring_node(fn)
    if node is None or not isinstance(node.value, ast.Constant) or not isinstance(node.value.value, str):
        return None
    return inspect.cleandoc(node.value.value)


def _strip_one(lines: list[str], fn: ast.FunctionDef | ast.AsyncFunctionDef, doc: ast.Expr) -> None:
    """Edit `lines` (no line ends) in place; later docstrings are stripped first so positions hold."""
    start, end = doc.lineno - 1, (doc.end_lineno or doc.lineno) - 1
    col, end_col = doc.col_offset, doc.end_col_offset or 0
    # ast columns are UTF-8 byte offsets.
    head = lines[start].encode()[:col].decode(errors="replace")
    tail = lines[end].encode()[end_col:].decode(errors="replace")
    alone = not head.strip() and (not tail.strip() or tail.strip().startswith("#"))
    only_statement = len(fn.body) == 1
    if alone:
        replacement = [head + "..."] if only_statement else []
        lines[start : end + 1] = replacement
    else:
        lines[start : end + 1] = [head + ("..." if only_statement else "pass") + tail]


def strip_docstrings(source: str) -> tuple[str, list[Definition]]:
    """The source without function docstrings, and every function of it with its original docstring."""
    tree = ast.parse(source)
    found = _functions(tree)
    lines = source.split("\n")
    docs = [_docstring(fn) for fn, _, _ in found]
    with_docs = [(fn, node) for (fn, _, _) in found if (node := _docstring_node(fn)) is not None]
    for fn, node in sorted(with_docs, key=lambda pair: -pair[1].lineno):
        _strip_one(lines, fn, node)
    stripped = "\n".join(lines)
    try:
        after = _functions(ast.parse(stripped))
    except SyntaxError as exc:
        raise StripFailed(f"stripped source does not parse: {exc}") from exc
    if [q for _, q, _ in after] != [q for _, q, _ in found]:
        raise StripFailed("stripping changed the set of definitions")
    out: list[Definition] = []
    for (fn, qualname, nested), text in zip(after, docs, strict=True):
        if _docstring_node(fn) is not None:
            raise StripFailed(f"{qualname} still has a docstring")
        first = min([fn.lineno, *(d.lineno for d in fn.decorator_list)]) - 1
        out.append(Definition(qualname, first, fn.lineno - 1, (fn.end_lineno or fn.lineno) - 1, nested, text))
    return stripped, out
