"""documentSymbol answers to symbols: both LSP shapes (DocumentSymbol trees, flat SymbolInformation) to one list.

A symbol keeps its kind's name, its name and dotted qualified name (clangd's `Foo::bar` too),
its range and selection, and its parent; what lies inside a callable is kept only when it is
chunked itself (a nested class or function), so locals never become symbols.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

log = logging.getLogger(__name__)

# LSP SymbolKind numbers (1-based, in spec order) to their names, lower-cased.
_KIND_ORDER = (
    "File Module Namespace Package Class Method Property Field Constructor Enum Interface Function Variable "
    "Constant String Number Boolean Array Object Key Null EnumMember Struct Event Operator TypeParameter"
)


SYMBOL_KIND_NAMES: dict[int, str] = {i: name.lower() for i, name in enumerate(_KIND_ORDER.split(" "), 1)}


CALLABLE_KINDS = frozenset({"function", "method", "constructor", "operator"})


TYPE_KINDS = frozenset({"class", "struct", "interface", "enum"})
CHUNKED_KINDS = CALLABLE_KINDS | TYPE_KINDS


@dataclass(frozen=True, slots=True)
class LspRange:
    """A 0-based LSP range; characters are in the server's position encoding."""

    start_line: int
    start_char: int
    end_line: int
    end_char: int

    @property
    def last_line(self) -> int:
        """The last line that holds part of the range (an end at column 0 excludes its line)."""
        if self.end_char == 0 and self.end_line > self.start_line:
            return self.end_line - 1
        return self.end_line


@dataclass(frozen=True, slots=True)
class ParsedSymbol:
    """One symbol of a file; parent is an index into the same list."""

    name: str
    qualified_name: str
    kind: str
    detail: str | None
    range: LspRange
    selection_range: LspRange
    container: str | None
    parent: int | None
    depth: int


def _range(raw: Any) -> LspRange | None:
    try:
        start, end = raw["start"], raw["end"]
        values = (start["line"], start["character"], end["line"], end["character"])
    except (KeyError, TypeError):
        return None
    if not all(isinstance(v, int) and v >= 0 for v in values):
        return None
    return LspRange(*values)


def _kind(raw: Mapping[str, Any]) -> str:
    kind = raw.get("kind")
    return SYMBOL_KIND_NAMES.get(kind, "unknown") if isinstance(kind, int) else "unknown"


def _names(raw_name: str, parent_qualified: str | None) -> tuple[str, str]:
    # clangd names out-of-line definitions `Foo::bar`; qualified names use dots everywhere.
    dotted = raw_name.replace("::", ".")
    name = dotted.rsplit(".", 1)[-1] if "::" in raw_name else raw_name
    qualified = f"{parent_qualified}.{dotted}" if parent_qualified else dotted
    return name, qualified


def parse_document_symbols(raw: Sequence[Any] | None) -> list[ParsedSymbol]:
    """Flatten DocumentSymbol[] or SymbolInformation[] into parent-linked symbols.

    Locals of functions (variables, parameters) are dropped: servers such as pyright
    report every assignment, which would drown the real definitions.
    """
    if not raw:
        return []
    items = [item for item in raw if isinstance(item, Mapping)]
    if any("location" in item for item in items):
        return _parse_flat(items)
    out: list[ParsedSymbol] = []
    _parse_tree(items, None, out)
    return out


def _keep(kind: str, inside_callable: bool) -> bool:
    return not inside_callable or kind in CHUNKED_KINDS


def _parse_tree(items: Sequence[Mapping[str, Any]], parent: int | None, out: list[ParsedSymbol]) -> None:
    parent_sym = out[parent] if parent is not None else None
    inside_callable = within_callable(out, parent)
    for item in items:
        name = item.get("name")
        rng = _range(item.get("range"))
        if not isinstance(name, str) or rng is None:
            log.debug("ignoring malformed DocumentSymbol %r", item)
            continue
        kind = _kind(item)
        if not _keep(kind, inside_callable):
            continue
        sel = _range(item.get("selectionRange")) or rng
        detail = item.get("detail")
        short, qualified = _names(name, parent_sym.qualified_name if parent_sym else None)
        out.append(
            ParsedSymbol(
                name=short,
                qualified_name=qualified,
                kind=kind,
                detail=detail if isinstance(detail, str) else None,
                range=rng,
                selection_range=sel,
                container=parent_sym.qualified_name if parent_sym else None,
                parent=parent,
                depth=parent_sym.depth + 1 if parent_sym else 0,
            )
        )
        children = item.get("children")
        if isinstance(children, list) and children:
            _parse_tree([c for c in children if isinstance(c, Mapping)], len(out) - 1, out)


def within_callable(out: Sequence[ParsedSymbol], index: int | None) -> bool:
    """Whether the symbol at `index` (a parent index, None at the top) is a callable or inside one."""
    while index is not None:
        if out[index].kind in CALLABLE_KINDS:
            return True
        index = out[index].parent
    return False


def _parse_flat(items: Sequence[Mapping[str, Any]]) -> list[ParsedSymbol]:
    entries: list[tuple[LspRange, str, str, str | None]] = []
    for item in items:
        name = item.get("name")
        location = item.get("location")
        rng = _range(location.get("range")) if isinstance(location, Mapping) else None
        if not isinstance(name, str) or rng is None:
            log.debug("ignoring malformed SymbolInformation %r", item)
            continue
        container = item.get("containerName")
        entries.append((rng, name, _kind(item), container if isinstance(container, str) else None))
    # Parents come before children when sorted by start ascending, end descending.
    entries.sort(key=lambda e: (e[0].start_line, e[0].start_char, -e[0].end_line, -e[0].end_char))
    out: list[ParsedSymbol] = []
    stack: list[int] = []
    for rng, raw_name, kind, container_name in entries:
        while stack and not _contains(out[stack[-1]].range, rng):
            stack.pop()
        parent = stack[-1] if stack else None
        if not _keep(kind, within_callable(out, parent)):
            continue
        parent_sym = out[parent] if parent is not None else None
        prefix = parent_sym.qualified_name if parent_sym else container_name
        prefix = prefix.replace("::", ".") if prefix else None
        short, qualified = _names(raw_name, prefix)
        out.append(
            ParsedSymbol(
                name=short,
                qualified_name=qualified,
                kind=kind,
                detail=None,
                range=rng,
                selection_range=_guess_selection(rng, short),
                container=prefix,
                parent=parent,
                depth=parent_sym.depth + 1 if parent_sym else 0,
            )
        )
        stack.append(len(out) - 1)
    return out


def _contains(outer: LspRange, inner: LspRange) -> bool:
    return (outer.start_line, outer.start_char) <= (inner.start_line, inner.start_char) and (
        inner.end_line,
        inner.end_char,
    ) <= (outer.end_line, outer.end_char)


def _guess_selection(rng: LspRange, name: str) -> LspRange:
    # SymbolInformation has no selection range; the start line is the best guess.
    return LspRange(rng.start_line, rng.start_char, rng.start_line, rng.start_char + len(name))
