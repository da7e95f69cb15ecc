"""What a commit changed, as the functions and methods of its parent's tree.

A commit's diff against its parent is taken file by file between the two texts with
comments and docstrings blanked out (lines kept), whitespace and blank lines ignored
(`git diff --no-index -U0 -w --ignore-blank-lines`): a change of documentation,
comments or layout alone changes no function. It is a list of hunks, each at a place
in the parent's file: lines replaced or removed, or lines inserted between two parent lines.
A function of the parent is changed when a hunk replaces or removes one of its lines,
or inserts lines strictly inside it; lines inserted right after a Python function's
last line belong to it when they are indented deeper than its `def` (an append to its
body, not a new function after it). Added functions are no answers: they did not exist
in the tree that gets indexed.

Functions are the outermost functions and methods of a file, as the index has them:
Python's by `ast` (decorators included, methods of classes at any depth, a function
nested in a function is part of the one around it); C and C++ ones from clangd's
`textDocument/documentSymbol` read by the index's own parser (graph/index/builder/preparing/document_symbols.py),
definitions only (a range holding a body), so a changed prototype is not an answer
but the definition it goes with is.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from bench.search.localize_git import diff_texts
from lensmux.graph.index.builder.preparing.document_symbols import CALLABLE_KINDS, parse_document_symbols

__all__ = ["Function", "Hunk", "changed_functions", "clangd_functions", "code_hunks", "parse_diff", "python_functions"]

_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


@dataclass(frozen=True, slots=True)
class Function:
    """One function or method of a parent tree; lines are 0-based and inclusive."""

    path: str
    qualname: str
    first_line: int  # the first decorator, or the start of the declaration
    def_line: int  # the line naming it
    end_line: int
    indent: int = 0  # columns before `def` (Python)

    def key(self) -> str:
        """`path:qualname:first line`, unique in a tree."""
        return f"{self.path}:{self.qualname}:{self.first_line}"

    def as_dict(self) -> dict[str, Any]:
        """JSON form."""
        return {
            "path": self.path,
            "qualname": self.qualname,
            "first_line": self.first_line,
            "def_line": self.def_line,
            "end_line": self.end_line,
        }


@dataclass(frozen=True, slots=True)
class Hunk:
    """One place of a diff in the parent file: `count` lines from `start` (0-based) replaced or removed,
    or (count 0) lines inserted after parent line `start - 1`; `added` are the child's lines."""

    start: int
    count: int
    added: tuple[str, ...]


def code_hunks(parent: str, child: str, language: str) -> list[Hunk]:
    """The hunks between two texts of one file once comments and docstrings are blanked."""
    code = python_code if language == "python" else c_code
    diff = diff_texts(code(parent), code(child))
    return next(iter(parse_diff(diff).values()), [])


def parse_diff(diff: str) -> dict[str, list[Hunk]]:
    """Hunks per parent path of a `git diff -U0` output (files added in the child have none)."""
    out: dict[str, list[Hunk]] = {}
    current: list[Hunk] | None = None
    start = count = 0
    added: list[str] = []
    header = False  # between `diff --git` and the file's first hunk

    def flush() -> None:
        if current is not None and (count or added):
            current.append(Hunk(start, count, tuple(added)))

    for line in diff.split("\n"):
        if line.startswith("diff --git "):
            flush()
            current, count, added, header = None, 0, [], True
        elif header and line.startswith("--- "):
            path = line[4:]
            current = out.setdefault(path[2:], []) if path.startswith("a/") else None
        elif line.startswith("@@"):
            flush()
            header = False
            match = _HUNK.match(line)
            if match is None:
                continue
            old_start, old_count = int(match.group(1)), int(match.group(2) or "1")
            # `-a,0` inserts after line a (1-based); `-a,b` replaces lines a..a+b-1.
            start, count, added = (old_start if old_count == 0 else old_start - 1), old_count, []
        elif line.startswith("+") and not line.startswith("+++") and current is not None:
            added.append(line[1:])
    flush()
    return {path: hunks for path, hunks in out.items() if hunks}


def _blank(text: str, spans: Iterable[tuple[int, int]]) -> str:
    """The text with the characters of each (start, end) offset span turned to spaces, line breaks kept."""
    chars = list(text)
    for start, end in spans:
        for i in range(start, min(end, len(chars))):
            if chars[i] not in "\r\n":
                chars[i] = " "
    return "".join(chars)


def _offsets(text: str) -> list[int]:
    """Offset of the start of each 1-based line (index 0 unused)."""
    starts = [0, 0]
    for match in re.finditer(r"\n", text):
        starts.append(match.end())
    return starts


def python_code(text: str) -> str:
    """Python text with comments and docstrings blanked (unchanged if it does not parse)."""
    try:
        tree = ast.parse(text)
        tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (SyntaxError, ValueError, tokenize.TokenError, IndentationError):
        return text
    starts = _offsets(text)
    lines = text.split("\n")

    def at(line: int, byte_col: int) -> int:  # ast columns count UTF-8 bytes
        return starts[line] + len(lines[line - 1].encode()[:byte_col].decode(errors="ignore"))

    spans = [
        (starts[t.start[0]] + t.start[1], starts[t.end[0]] + t.end[1]) for t in tokens if t.type == tokenize.COMMENT
    ]
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and node.body:
            first = node.body[0]
            docstring = isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
            if docstring and isinstance(first.value.value, str) and first.end_lineno is not None:  # type: ignore[attr-defined]
                spans.append((at(first.lineno, first.col_offset), at(first.end_lineno, first.end_col_offset or 0)))
    return _blank(text, spans)


def c_code(text: str, *, literals: bool = False) -> str:
    """C/C++ text with comments blanked; string and character literals are read past, and blanked inside
    only with `literals` (a diff must see a changed literal; a brace scanner must not see braces in one)."""
    spans: list[tuple[int, int]] = []
    i = 0
    while i < len(text):
        c = text[i]
        if c in "\"'":
            j = i + 1
            while j < len(text) and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            if literals:
                spans.append((i + 1, min(j, len(text))))
            i = j + 1
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = len(text) if end < 0 else end + 2
            spans.append((i, end))
            i = end
        elif text.startswith("//", i):
            end = text.find("\n", i)
            end = len(text) if end < 0 else end
            spans.append((i, end))
            i = end
        else:
            i += 1
    return _blank(text, spans)


def python_functions(path: str, source: str) -> list[Function]:
    """The outermost functions and methods of a Python file (none if it does not parse)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return []
    out: list[Function] = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                first = min([d.lineno for d in child.decorator_list] + [child.lineno]) - 1
                end = (child.end_lineno or child.lineno) - 1
                name = f"{prefix}{child.name}"
                out.append(Function(path, name, first, child.lineno - 1, end, child.col_offset))
            elif isinstance(child, ast.ClassDef):
                visit(child, f"{prefix}{child.name}.")
            elif not isinstance(child, ast.Lambda):
                visit(child, prefix)  # if/try blocks at module or class level

    visit(tree, "")
    return out


def clangd_functions(path: str, source: str, symbols: Sequence[Any] | None) -> list[Function]:
    """The outermost function and method definitions of a C/C++ file from clangd's documentSymbol answer."""
    parsed = parse_document_symbols(symbols)
    lines = re.split(r"\r\n|\r|\n", source)
    out: list[Function] = []
    for symbol in parsed:
        if symbol.kind not in CALLABLE_KINDS or _inside_callable(parsed, symbol.parent):
            continue
        first, last = symbol.range.start_line, symbol.range.last_line
        if "{" not in "\n".join(lines[symbol.selection_range.start_line : last + 1]):
            continue  # a declaration: no body
        out.append(Function(path, symbol.qualified_name, first, symbol.selection_range.start_line, last))
    return out


def _inside_callable(parsed: Sequence[Any], index: int | None) -> bool:
    while index is not None:
        if parsed[index].kind in CALLABLE_KINDS:
            return True
        index = parsed[index].parent
    return False


def _indent(text: str) -> int:
    return len(text) - len(text.lstrip(" \t"))


def _touched(function: Function, hunk: Hunk, python: bool) -> bool:
    if hunk.count > 0:
        return function.first_line <= hunk.start + hunk.count - 1 and hunk.start <= function.end_line
    before, after = hunk.start - 1, hunk.start  # inserted between these parent lines
    if function.first_line <= before and after <= function.end_line:
        return True
    if python and before == function.end_line:
        body = next((line for line in hunk.added if line.strip()), None)
        return body is not None and _indent(body) > function.indent
    return False


def changed_functions(functions: Iterable[Function], hunks: Sequence[Hunk], *, python: bool) -> list[Function]:
    """The functions any hunk changes, in file order."""
    return [f for f in functions if any(_touched(f, h, python) for h in hunks)]
