"""Outgoing calls of a symbol when its server has no call hierarchy (or no outgoingCalls).

Asking `references` of every possible callee would cost one request per indexed
function, so the derivation reads the caller instead: every `name(` in the symbol's
own lines is a call site; names that resolve to exactly one indexed function or class
are taken as they are, and ambiguous names (`send` defined in three classes) are settled
by one `textDocument/definition` at the call site when the server has it, else by a
unique candidate in the same file, else dropped. Keywords and the symbol's own
definition line never count.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import anyio.to_thread

from lensmux.graph.index.builder.preparing.document_symbols import CALLABLE_KINDS, TYPE_KINDS
from lensmux.graph.index.errors import store_errors_unwrapped
from lensmux.graph.search.catalog import Catalog, Node, symbol_node
from lensmux.graph.search.gateway import LspCalls

__all__ = ["CallSite", "call_sites", "derive_outgoing", "location_nodes"]

_CALL_SITE = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\s*\(")
_DEFINING = ("def", "class", "fn", "func", "function", "struct", "enum", "interface")
_NOT_CALLS_TEXT = """if elif else while for foreach switch case return yield await async sizeof alignof typeof
    decltype catch try throw with assert lambda not and or in is print super self this
    defined static_assert nameof default"""
NOT_CALLS = frozenset(_NOT_CALLS_TEXT.split())


@dataclass(frozen=True, slots=True)
class CallSite:
    """A `name(` in a symbol's text; character is in UTF-16 code units like LSP positions."""

    name: str
    line: int
    character: int


def _strip_comment(text: str) -> str:
    for marker in ("//", "#"):
        cut = text.find(marker)
        if cut >= 0 and not text[:cut].strip().startswith(("#include", "#define")):
            text = text[:cut]
    return text


def call_sites(lines: Sequence[str], node: Node, limit: int) -> list[CallSite]:
    """The first call site of each distinct name in the node's lines, in text order."""
    seen: dict[str, CallSite] = {}
    last = min(node.range.last_line, len(lines) - 1)
    for number in range(node.range.start_line, last + 1):
        text = _strip_comment(lines[number])
        for match in _CALL_SITE.finditer(text):
            name = match.group(1)
            before = text[: match.start(1)]
            if name in NOT_CALLS or name in seen:
                continue
            if before.rstrip().endswith(_DEFINING) or (number == node.selection.start_line and name == node.name):
                continue
            character = len(before.encode("utf-16-le")) // 2
            seen[name] = CallSite(name, number, character)
            if len(seen) >= limit:
                return list(seen.values())
    return list(seen.values())


def _candidates(catalog: Catalog, name: str) -> list[Node]:
    found = catalog.store.lookup_symbols(name, limit=20)
    return [symbol_node(s) for s in found if s.name == name and s.kind in CALLABLE_KINDS | TYPE_KINDS]


def location_nodes(result: Any, catalog: Catalog) -> list[Node]:
    """Nodes enclosing the Location / Location[] / LocationLink[] a server answered."""
    items = result if isinstance(result, list) else [result]
    out: list[Node] = []
    for item in items:
        if not isinstance(item, Mapping):
            continue
        uri = item.get("uri", item.get("targetUri"))
        rng = item.get("range", item.get("targetSelectionRange"))
        start = rng.get("start") if isinstance(rng, Mapping) else None
        line = start.get("line") if isinstance(start, Mapping) else None
        path = catalog.path_of_uri(uri)
        if path is not None and isinstance(line, int) and (node := catalog.symbol_at(path, line)) is not None:
            out.append(node)
    return out


async def derive_outgoing(node: Node, language: str, catalog: Catalog, lsp: LspCalls, *, limit: int) -> list[Node]:
    """Callees of node read from its text, best effort (empty when its file changed since indexing)."""
    lines = await anyio.to_thread.run_sync(catalog.lines, node.path)
    if lines is None:
        return []
    sites = call_sites(lines, node, limit)
    resolved: dict[int, Node] = {}
    candidates = await anyio.to_thread.run_sync(lambda: [_candidates(catalog, site.name) for site in sites])
    caps = await lsp.capabilities(language)
    can_ask = bool(caps and caps.get("definitionProvider"))
    uri = (catalog.root / node.path).as_uri()

    async def settle(i: int, site: CallSite, options: list[Node]) -> None:
        params = {"textDocument": {"uri": uri}, "position": {"line": site.line, "character": site.character}}
        answer = await lsp.call(language, "textDocument/definition", params)
        keys = {o.key for o in options}
        targets = await anyio.to_thread.run_sync(location_nodes, answer, catalog) if answer else []
        chosen = next((t for t in targets if t.key in keys), None)
        if chosen is not None:
            resolved[i] = chosen

    # settle maps definitions to indexed symbols: a store failing under it leaves as itself.
    with store_errors_unwrapped():
        async with anyio.create_task_group() as tg:
            for i, (site, options) in enumerate(zip(sites, candidates, strict=True)):
                if len(options) == 1:
                    resolved[i] = options[0]
                elif len(options) > 1 and can_ask:
                    tg.start_soon(settle, i, site, options)
    for i, options in enumerate(candidates):
        if i not in resolved and len(options) > 1:
            local = [o for o in options if o.path == node.path]
            if len(local) == 1:
                resolved[i] = local[0]
    out: list[Node] = []
    for i in sorted(resolved):
        target = resolved[i]
        if target.key != node.key and all(target.key != o.key for o in out):
            out.append(target)
    return out
