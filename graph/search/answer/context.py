"""LLM-ready context from ranked symbols within a token budget (seed 002).

Tokens are counted with the caller's counter (the embedding tokenizer in the daemon),
never estimated from characters. Symbols are grouped by kind, groups ordered by their
best member; a sources list closes the text. When the budget is short, whole symbols
are dropped, lowest score first, and anchors only after every other symbol is gone.
The choice is made from per-block counts and checked by counting the final text.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import PurePosixPath
from typing import Literal
from xml.sax.saxutils import escape, quoteattr

import msgspec

from lensmux.graph.index.builder.files.languages import LANGUAGE_BY_EXTENSION
from lensmux.graph.search.api import SymbolResult

__all__ = ["AssembledContext", "ContextFormat", "ContextSource", "assemble_context", "qualified_name"]

ContextFormat = Literal["markdown", "xml", "plain"]
FORMATS: tuple[ContextFormat, ...] = ("markdown", "xml", "plain")
_FENCE_LANGUAGE = {"csharp": "cs", "shellscript": "sh", "javascriptreact": "jsx", "typescriptreact": "tsx"}
_PLURAL = {"class": "Classes", "property": "Properties", "file": "Files", "module": "Module code"}


class ContextSource(msgspec.Struct, frozen=True):
    """One symbol that made it into the context; line is 1-based."""

    id: str
    name: str
    kind: str
    file_path: str
    line: int
    score: float
    anchor: bool


class AssembledContext(msgspec.Struct, frozen=True):
    """The context text, its token count, and what it holds or had to leave out."""

    format: ContextFormat
    context: str
    token_count: int
    budget_tokens: int
    truncated: bool
    sources: list[ContextSource]
    dropped: list[str]


def qualified_name(symbol: SymbolResult) -> str:
    """The qualified name inside a symbol id `<path>:<qualified name>:<line>`."""
    inner = symbol.id[len(symbol.file_path) + 1 :] if symbol.id.startswith(symbol.file_path + ":") else symbol.id
    return inner.rsplit(":", 1)[0] if ":" in inner else inner


def _lines(symbol: SymbolResult) -> tuple[int, int]:
    end = symbol.range.end
    last = end.line - 1 if end.character == 0 and end.line > symbol.range.start.line else end.line
    return symbol.range.start.line + 1, last + 1


def _code(symbol: SymbolResult, max_lines: int) -> str:
    lines = symbol.raw_code.split("\n")
    if len(lines) <= max_lines:
        return symbol.raw_code
    return "\n".join([*lines[:max_lines], f"... ({len(lines) - max_lines} more lines)"])


def _group_title(kind: str) -> str:
    return _PLURAL.get(kind, kind.replace("_", " ").capitalize() + "s")


class _Renderer:
    def __init__(self, fmt: ContextFormat, max_code_lines: int) -> None:
        self.fmt = fmt
        self.max_code_lines = max_code_lines

    def opening(self) -> str:
        return "<context>\n" if self.fmt == "xml" else ""

    def closing(self) -> str:
        return "</context>\n" if self.fmt == "xml" else ""

    def heading(self, kind: str) -> str:
        title = _group_title(kind)
        if self.fmt == "markdown":
            return f"## {title}\n\n"
        if self.fmt == "xml":
            return f"<group kind={quoteattr(kind)} title={quoteattr(title)}>\n"
        return f"=== {title} ===\n\n"

    def group_end(self) -> str:
        return "</group>\n" if self.fmt == "xml" else ""

    def block(self, s: SymbolResult) -> str:
        first, last = _lines(s)
        where = f"{s.file_path}:{first}-{last}"
        code = _code(s, self.max_code_lines)
        name = qualified_name(s)
        if self.fmt == "markdown":
            language = LANGUAGE_BY_EXTENSION.get(PurePosixPath(s.file_path).suffix.lower(), "")
            fence = "```"
            while fence in code:
                fence += "`"
            lang = _FENCE_LANGUAGE.get(language, language)
            return f"### `{name}` ({s.kind})\n{where} · score {s.score:.3f}\n\n{fence}{lang}\n{code}\n{fence}\n\n"
        if self.fmt == "xml":
            attrs = f"name={quoteattr(name)} kind={quoteattr(s.kind)} file={quoteattr(s.file_path)}"
            return f'<symbol {attrs} lines="{first}-{last}" score="{s.score:.3f}">\n{escape(code)}\n</symbol>\n'
        return f"{name} ({s.kind}) {where} score {s.score:.3f}\n{code}\n\n"

    def sources_heading(self) -> str:
        return {"markdown": "## Sources\n\n", "xml": "<sources>\n", "plain": "=== Sources ===\n"}[self.fmt]

    def sources_end(self) -> str:
        return "</sources>\n" if self.fmt == "xml" else ""

    def source(self, s: SymbolResult) -> str:
        first, _ = _lines(s)
        name = qualified_name(s)
        if self.fmt == "markdown":
            return f"- `{name}` ({s.kind}) {s.file_path}:{first}\n"
        if self.fmt == "xml":
            return f'<source name={quoteattr(name)} file={quoteattr(s.file_path)} line="{first}"/>\n'
        return f"- {name} ({s.kind}) {s.file_path}:{first}\n"

    def render(self, chosen: Sequence[SymbolResult]) -> str:
        if not chosen:
            return ""
        parts = [self.opening()]
        for kind, members in _groups(chosen):
            parts.append(self.heading(kind))
            parts.extend(self.block(s) for s in members)
            parts.append(self.group_end())
        parts.append(self.sources_heading())
        parts.extend(self.source(s) for s in chosen)
        parts.append(self.sources_end())
        parts.append(self.closing())
        return "".join(parts).rstrip("\n") + "\n"


def _groups(chosen: Sequence[SymbolResult]) -> list[tuple[str, list[SymbolResult]]]:
    groups: dict[str, list[SymbolResult]] = {}
    for s in chosen:
        groups.setdefault(s.kind, []).append(s)
    return list(groups.items())


def _drop_order(symbols: Sequence[SymbolResult]) -> list[int]:
    """Indexes in the order they are given up: non-anchors by rising score (worst rank first), then anchors."""
    return sorted(range(len(symbols)), key=lambda i: (symbols[i].is_anchor, symbols[i].score, -i))


def assemble_context(
    symbols: Sequence[SymbolResult],
    *,
    budget_tokens: int,
    count_tokens: Callable[[str], int],
    fmt: ContextFormat = "markdown",
    max_code_lines: int = 80,
) -> AssembledContext:
    """Render the ranked symbols in fmt within budget_tokens as counted by count_tokens."""
    renderer = _Renderer(fmt, max_code_lines)
    cost = [count_tokens(renderer.block(s)) + count_tokens(renderer.source(s)) for s in symbols]
    heading_cost = {
        kind: count_tokens(renderer.heading(kind) + renderer.group_end()) for kind in {s.kind for s in symbols}
    }
    fixed = count_tokens(renderer.opening() + renderer.sources_heading() + renderer.sources_end() + renderer.closing())
    alive = set(range(len(symbols)))
    kinds_alive: dict[str, int] = {}
    for s in symbols:
        kinds_alive[s.kind] = kinds_alive.get(s.kind, 0) + 1
    estimate = fixed + sum(cost) + sum(heading_cost.values()) if symbols else 0
    order = iter(_drop_order(symbols))

    def drop_next() -> bool:
        nonlocal estimate
        index = next(order, None)
        if index is None:
            return False
        alive.discard(index)
        kind = symbols[index].kind
        kinds_alive[kind] -= 1
        estimate -= cost[index] + (heading_cost[kind] if kinds_alive[kind] == 0 else 0)
        if not alive:
            estimate = 0
        return True

    while estimate > budget_tokens and drop_next():
        pass
    while True:
        chosen = [s for i, s in enumerate(symbols) if i in alive]
        text = renderer.render(chosen)
        tokens = count_tokens(text) if text else 0
        # Per-block counts can differ from the whole text's at the joins; the final count decides.
        if tokens <= budget_tokens or not drop_next():
            break
    if tokens > budget_tokens:
        chosen, text, tokens = [], "", 0
    sources = [
        ContextSource(s.id, qualified_name(s), s.kind, s.file_path, _lines(s)[0], s.score, s.is_anchor) for s in chosen
    ]
    dropped = [s.id for i, s in enumerate(symbols) if i not in alive or not chosen]
    return AssembledContext(fmt, text, tokens, budget_tokens, bool(dropped), sources, dropped)
