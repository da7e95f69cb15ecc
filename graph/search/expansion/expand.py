"""Stage 2: breadth-first expansion from the seeds through the live language servers.

Per symbol: prepareCallHierarchy at its name, then incomingCalls and outgoingCalls,
and references, concurrently under the query's in-flight cap; where the server has no
outgoing calls they are derived (derive.py). A function or method whose server has a
call hierarchy is not asked for references unless `callable_references` is set: its
callers come from incomingCalls, and what references add beyond them (imports, the
name passed as a value) maps mostly to module code or repeats a caller, while the
request is the slowest a server answers (it scans every file that spells the name). Every answered location becomes the
indexed symbol enclosing it. Level by level: all of one depth is asked, then the
answers are absorbed in frontier order, so the same answers always give the same
graph. The stage stops at the depth limit, the node cap, or its time budget, and then
keeps whatever was answered. A symbol the index has learned (memory.py) is read, not
asked; one whose every request was answered is stored for the next search.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import anyio
import anyio.to_thread

from lensmux.graph.index.builder.preparing.document_symbols import CALLABLE_KINDS, TYPE_KINDS
from lensmux.graph.index.errors import store_errors_unwrapped
from lensmux.graph.search.catalog import Catalog, Node
from lensmux.graph.search.expansion.derive import derive_outgoing
from lensmux.graph.search.expansion.memory import Findings, GraphMemory
from lensmux.graph.search.gateway import LspCalls

log = logging.getLogger(__name__)

__all__ = ["EdgeKind", "Expansion", "Relation", "ask_about", "expand"]

EdgeKind = Literal["calls", "references", "inherits", "contains"]
OUTGOING = "callHierarchy/outgoingCalls"
INCOMING = "callHierarchy/incomingCalls"
# A reference to a class this close below another class's name is in its base list.
_HEADER_LINES = 2


@dataclass(frozen=True, slots=True)
class Relation:
    """A directed edge: caller -> callee, referrer -> referenced, subclass -> base, parent -> child."""

    source: str
    target: str
    kind: EdgeKind


@dataclass(slots=True)
class Expansion:
    """Stage 2's answer: every node (seeds first), the relations found, and why nodes are here."""

    nodes: dict[str, Node]
    depth: dict[str, int] = field(default_factory=dict)
    relations: list[Relation] = field(default_factory=list)
    reasons: dict[str, list[str]] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    timed_out: bool = False
    capped: bool = False
    # Indexed symbols the servers were asked about live (nothing learned for them), in the
    # order asked: the daemon's learner asks about them first (daemon/search/graph_learning.py).
    asked_live: list[int] = field(default_factory=list)


def _line(rng: Any) -> int | None:
    start = rng.get("start") if isinstance(rng, Mapping) else None
    line = start.get("line") if isinstance(start, Mapping) else None
    return line if isinstance(line, int) else None


def _start(item: Any, key: str = "selectionRange") -> int | None:
    return _line(item.get(key)) if isinstance(item, Mapping) else None


class _Expander:
    def __init__(
        self,
        catalog: Catalog,
        lsp: LspCalls,
        *,
        max_nodes: int,
        max_neighbors: int,
        max_derived: int,
        generic: frozenset[str],
        callable_references: bool = False,
        memory: GraphMemory | None = None,
    ) -> None:
        self.catalog = catalog
        self.memory = memory
        self.lsp = lsp
        self.max_nodes = max_nodes
        self.max_neighbors = max_neighbors
        self.max_derived = max_derived
        self.callable_references = callable_references
        self.generic = generic
        self.result = Expansion(nodes={})
        # Nodes ever put in a frontier: a seed that was not a root is expanded once reached.
        self.enqueued: set[str] = set()

    def is_generic(self, node: Node) -> bool:
        return node.name.lower() in self.generic

    # -- asking -----------------------------------------------------------------------------

    async def expand_one(self, node: Node, out: dict[str, Findings]) -> None:
        language = await anyio.to_thread.run_sync(self.catalog.language, node.path)
        if language is None or not self.lsp.available(language):
            return
        caps = await self.lsp.capabilities(language)
        if caps is None:
            return
        findings = out.setdefault(node.key, Findings())
        # The tasks map answers to indexed symbols: a store failing under them leaves as itself.
        with LspCalls.watching() as failures, store_errors_unwrapped():
            async with anyio.create_task_group() as tg:
                if node.kind in CALLABLE_KINDS:
                    tg.start_soon(self._calls, node, language, caps, findings)
                has_calls = node.kind in CALLABLE_KINDS and bool(caps.get("callHierarchyProvider"))
                if caps.get("referencesProvider") and (self.callable_references or not has_calls):
                    tg.start_soon(self._references, node, language, findings)
        # Everything answered, by a server that knows the whole workspace: worth keeping.
        if self.memory is not None and not failures and self.lsp.settled(language):
            self.memory.note(node, findings)

    async def ask_level(self, frontier: Sequence[Node], found: dict[str, Findings]) -> None:
        """Findings for every frontier node: remembered ones read, the others asked concurrently."""
        if self.memory is not None:
            found.update(await anyio.to_thread.run_sync(self.memory.recall, frontier))
        live = [node for node in frontier if node.key not in found]
        self.result.asked_live += [node.symbol_id for node in live if node.symbol_id is not None]
        with store_errors_unwrapped():
            async with anyio.create_task_group() as tg:
                for node in live:
                    tg.start_soon(self.expand_one, node, found)

    def _position(self, node: Node) -> dict[str, Any]:
        return {
            "textDocument": {"uri": (self.catalog.root / node.path).as_uri()},
            "position": {"line": node.selection.start_line, "character": node.selection.start_char},
        }

    async def _calls(self, node: Node, language: str, caps: Mapping[str, Any], findings: Findings) -> None:
        if not caps.get("callHierarchyProvider"):
            await self._derive(node, language, findings)
            return
        # A failed or empty answer is not a missing capability: nothing is derived then.
        items = await self.lsp.call(language, "textDocument/prepareCallHierarchy", self._position(node))
        if self.lsp.unsupported(language, "textDocument/prepareCallHierarchy"):
            await self._derive(node, language, findings)
            return
        if not isinstance(items, list) or not items:
            return
        item = next((i for i in items if isinstance(i, Mapping) and i.get("name") == node.name), items[0])

        async def incoming() -> None:
            answer = await self.lsp.call(language, INCOMING, {"item": item})
            findings.incoming.extend(await anyio.to_thread.run_sync(self._map_incoming, answer, node))

        async def outgoing() -> None:
            answer = await self.lsp.call(language, OUTGOING, {"item": item})
            if self.lsp.unsupported(language, OUTGOING):
                await self._derive(node, language, findings)
                return
            callees = await anyio.to_thread.run_sync(self._map_outgoing, answer, node)
            findings.outgoing.extend((callee, False) for callee in callees)

        with store_errors_unwrapped():
            async with anyio.create_task_group() as tg:
                tg.start_soon(incoming)
                tg.start_soon(outgoing)

    async def _derive(self, node: Node, language: str, findings: Findings) -> None:
        callees = await derive_outgoing(node, language, self.catalog, self.lsp, limit=self.max_derived)
        findings.outgoing.extend((callee, True) for callee in callees[: self.max_neighbors])

    async def _references(self, node: Node, language: str, findings: Findings) -> None:
        params = {**self._position(node), "context": {"includeDeclaration": False}}
        answer = await self.lsp.call(language, "textDocument/references", params)
        findings.references.extend(await anyio.to_thread.run_sync(self._map_references, answer, node))

    # -- mapping answers to nodes (worker threads) ------------------------------------------

    def _keep(self, nodes: Sequence[Node], candidate: Node, node: Node) -> bool:
        if candidate.key == node.key or any(n.key == candidate.key for n in nodes):
            return False
        return len(nodes) < self.max_neighbors

    def _map_incoming(self, answer: Any, node: Node) -> list[Node]:
        out: list[Node] = []
        for call in _sorted_calls(answer, "from"):
            caller = call["from"]
            path = self.catalog.path_of_uri(caller.get("uri"))
            ranges = call.get("fromRanges")
            # The call site is inside the real caller even when `from` is a module or a lambda.
            line = _line(ranges[0]) if isinstance(ranges, list) and ranges else _start(caller)
            found = self.catalog.symbol_at(path, line) if path is not None and line is not None else None
            if found is not None and self._keep(out, found, node):
                out.append(found)
        return out

    def _map_outgoing(self, answer: Any, node: Node) -> list[Node]:
        out: list[Node] = []
        for call in _sorted_calls(answer, "to"):
            callee = call["to"]
            path = self.catalog.path_of_uri(callee.get("uri"))
            line = _start(callee)
            found = self.catalog.symbol_at(path, line) if path is not None and line is not None else None
            if found is not None and self._keep(out, found, node):
                out.append(found)
        return out

    def _map_references(self, answer: Any, node: Node) -> list[tuple[Node, bool]]:
        locations = [loc for loc in answer if isinstance(loc, Mapping)] if isinstance(answer, list) else []
        locations.sort(key=lambda loc: (str(loc.get("uri")), _start(loc, "range") or 0))
        out: list[Node] = []
        inherits: list[bool] = []
        for loc in locations:
            path = self.catalog.path_of_uri(loc.get("uri"))
            line = _start(loc, "range")
            found = self.catalog.symbol_at(path, line) if path is not None and line is not None else None
            if path == node.path and line is not None and node.range.start_line <= line <= node.range.last_line:
                continue  # inside the symbol itself (recursion, its own body)
            if found is not None and line is not None and self._keep(out, found, node):
                out.append(found)
                inherits.append(
                    found.kind in TYPE_KINDS
                    and node.kind in TYPE_KINDS
                    and found.range.start_line <= line <= found.selection.end_line + _HEADER_LINES
                )
        return list(zip(out, inherits, strict=True))

    # -- absorbing answers (event loop, deterministic order) ----------------------------------

    def absorb(self, frontier: Sequence[Node], found: Mapping[str, Findings], depth: int) -> list[Node]:
        nxt: list[Node] = []
        for node in frontier:
            f = found.get(node.key)
            if f is None:
                continue
            name = node.qualified_name
            called: set[str] = set()
            for callee, derived in f.outgoing:
                why = f"expanded:called_by:{name}" + (":derived" if derived else "")
                self._link(Relation(node.key, callee.key, "calls"), callee, why, depth=depth, nxt=nxt)
            for caller in f.incoming:
                called.add(caller.key)
                why = f"expanded:calls:{name}"
                self._link(Relation(caller.key, node.key, "calls"), caller, why, depth=depth, nxt=nxt)
            for referrer, base in f.references:
                kind: EdgeKind = "inherits" if base else "references"
                # A referrer already found as a caller has its (more telling) `calls` reason.
                because = None if referrer.key in called and not base else f"expanded:{kind}:{name}"
                self._link(Relation(referrer.key, node.key, kind), referrer, because, depth=depth, nxt=nxt)
        return nxt

    def _link(self, relation: Relation, found: Node, why: str | None, *, depth: int, nxt: list[Node]) -> None:
        """Record relation; found (its other end) joins the graph unless generic or over the cap."""
        nodes = self.result.nodes
        if found.key not in nodes:
            if self.is_generic(found):
                return
            if len(nodes) >= self.max_nodes:
                self.result.capped = True
                return
            nodes[found.key] = found
            self.result.depth[found.key] = depth
        if found.expandable and found.key not in self.enqueued and not self.is_generic(found):
            self.enqueued.add(found.key)
            nxt.append(found)
        self.result.relations.append(relation)
        if why is not None:
            reasons = self.result.reasons.setdefault(found.key, [])
            if why not in reasons:
                reasons.append(why)


def _sorted_calls(answer: Any, side: str) -> list[Mapping[str, Any]]:
    calls = (
        [c for c in answer if isinstance(c, Mapping) and isinstance(c.get(side), Mapping)]
        if isinstance(answer, list)
        else []
    )
    return sorted(calls, key=lambda c: (str(c[side].get("uri")), _start(c[side]) or 0, str(c[side].get("name"))))


async def expand(
    seeds: Sequence[Node],
    roots: Sequence[Node],
    catalog: Catalog,
    lsp: LspCalls,
    *,
    max_depth: int,
    max_nodes: int,
    max_neighbors: int,
    max_derived: int,
    budget_s: float,
    generic: frozenset[str],
    callable_references: bool = False,
    memory: GraphMemory | None = None,
) -> Expansion:
    """Stage 2: expand `roots` (a subset of `seeds`) up to max_depth, within budget_s seconds."""
    ex = _Expander(
        catalog,
        lsp,
        max_nodes=max_nodes,
        max_neighbors=max_neighbors,
        max_derived=max_derived,
        generic=generic,
        callable_references=callable_references,
        memory=memory,
    )
    ex.result.nodes.update((n.key, n) for n in seeds)
    frontier = [n for n in roots if n.expandable]
    ex.enqueued.update(n.key for n in frontier)
    found: dict[str, Findings] = {}
    depth = 0
    with anyio.move_on_after(budget_s) as scope:
        while frontier and depth < max_depth:
            depth += 1
            found = {}
            await ex.ask_level(frontier, found)
            frontier = ex.absorb(frontier, found, depth)
            found = {}
    if scope.cancelled_caught:
        # Keep what the unfinished level had answered; its new nodes stay unexpanded.
        ex.absorb(frontier, found, depth)
        ex.result.timed_out = True
        ex.result.warnings.append(
            f"expansion stopped at its {budget_s:g} s budget (depth {depth}); results use the graph found so far"
        )
    if ex.result.capped:
        ex.result.warnings.append(f"expansion stopped at {max_nodes} nodes")
    if memory is not None and memory.noted:
        await anyio.to_thread.run_sync(memory.save)
    return ex.result


async def ask_about(
    nodes: Sequence[Node],
    catalog: Catalog,
    lsp: LspCalls,
    memory: GraphMemory,
    *,
    max_neighbors: int,
    max_derived: int,
    callable_references: bool = False,
) -> int:
    """Ask the servers about each node in turn, as expansion would, and store what was complete."""
    ex = _Expander(
        catalog,
        lsp,
        max_nodes=len(nodes),
        max_neighbors=max_neighbors,
        max_derived=max_derived,
        generic=frozenset(),
        callable_references=callable_references,
        memory=memory,
    )
    for node in nodes:
        await ex.expand_one(node, {})
    return await anyio.to_thread.run_sync(memory.save)
