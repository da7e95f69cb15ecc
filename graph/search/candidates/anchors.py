"""Structural anchors: files and identifiers the query names, resolved to index nodes (seed 001).

A mention is something written like code: a backticked span (Markdown `x` or ``x``,
reST roles such as :func:`x`, :class:`~pkg.Name` and `title <target>`), a path with a
known extension, a dotted name, snake_case, camelCase, `name()`, or a capitalised word
in mid-sentence. Plain English words are never anchors, so `retry failed uploads`
anchors nothing and is left to the keyword and vector sides.

Code-shaped mentions are anchors: they form tiers above every other candidate. A
capitalised word is only a *weak* mention (Flask, Python, Jinja, WSGI are as often
project and product names as classes): a class of exactly that name joins the
candidates with a bonus worth one source's first place, and no tier. A name the
index holds more often than max_symbols anchors its best-matching definitions
(stage 1 chooses by fused score), and an ALL-CAPS mention (a constant, an HTTP
method, a configuration key) never anchors a differently cased symbol.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any, Literal

import anyio

from lensmux.graph.index.builder.files.languages import LANGUAGE_BY_EXTENSION
from lensmux.graph.index.builder.preparing.document_symbols import CHUNKED_KINDS, TYPE_KINDS
from lensmux.graph.search.catalog import Catalog, Node, chunk_node, symbol_node
from lensmux.graph.search.gateway import LspCalls

__all__ = ["AnchorSet", "Mention", "extract_mentions", "resolve_mentions", "resolve_with_workspace_symbols"]

MentionKind = Literal["file", "symbol", "type"]
# Anchor tiers: an explicitly named symbol outranks the symbols of a named file; a weak
# mention has no tier (TIER_NONE), only a fusion bonus.
TIER_SYMBOL = 2
TIER_FILE = 1
TIER_NONE = 0
REASON_SYMBOL = "anchor:explicit_symbol"
REASON_FILE = "anchor:explicit_file"
REASON_MENTION = "seed:mention"
REASON_WORKSPACE = "resolved:workspace_symbol"
# Candidates looked at per symbol mention, as a multiple of max_symbols.
_CANDIDATES_PER_ANCHOR = 4

# A code span is a run of backticks, text, and a run of the same length (`x`, ``x``).
_BACKTICKS = re.compile(r"(?<!`)(`+)(?!`)([^`\n]+?)(?<!`)\1(?!`)")
# reST `title <target>` references name the target.
_REST_TARGET = re.compile(r".*<([^<>]+)>\s*")
_IDENTIFIER_PATH = re.compile(r"[A-Za-z_]\w*(?:(?:\.|::)[A-Za-z_]\w*)*")
_NOT_SYMBOLS = frozenset({"True", "False", "None", "true", "false", "null", "nil", "self", "cls", "this"})
_PATH = re.compile(r"(?<![\w/.-])((?:[\w.-]+/)*[\w-][\w.-]*\.[A-Za-z0-9+]+)(?![\w/])")
_DOTTED = re.compile(r"(?<![\w.])([A-Za-z_]\w*(?:(?:\.|::)[A-Za-z_]\w*)+)(?!\w)")
_CALL = re.compile(r"(?<![\w.])([A-Za-z_]\w*)\(\)")
_SNAKE = re.compile(r"(?<![\w.])(_*[A-Za-z][A-Za-z0-9]*(?:_+[A-Za-z0-9]+)+_*|__[a-z]+__)(?![\w.])")
_CAMEL = re.compile(
    r"(?<![\w.])([a-z]+[0-9]*(?:[A-Z][a-z0-9]*)+|[A-Z]+[a-z0-9]+(?:[A-Z]+[a-z0-9]*)+|[A-Z]{2,}[a-z]\w*)(?![\w.])"
)
_CAPITALISED = re.compile(r"(?<![\w.])([A-Z][a-z0-9]{2,})(?![\w.])")
_SENTENCE_START = re.compile(r"(?:^|[.!?:;]\s*|\n\s*)$")


@dataclass(frozen=True, slots=True)
class Mention:
    """Something the query names; kind `type` is a capitalised word that only a class may resolve."""

    text: str
    kind: MentionKind
    explicit: bool = False  # backticked


def _is_path(text: str) -> bool:
    suffix = PurePosixPath(text).suffix.lower()
    return suffix in LANGUAGE_BY_EXTENSION or ("/" in text and bool(suffix))


def _clean_symbol(text: str) -> str:
    """The identifier a code span names, or "" when it is a literal or an expression."""
    target = _REST_TARGET.fullmatch(text)
    if target is not None:
        text = target.group(1)
    # `Uploader.send(path)` names Uploader.send; reST `~pkg.mod.Name` and `.name` name Name.
    name = text.split("(", 1)[0].strip().lstrip("~!").strip(".:")
    if not _IDENTIFIER_PATH.fullmatch(name) or name in _NOT_SYMBOLS:
        return ""
    return name


def extract_mentions(query: str) -> list[Mention]:
    """Files and identifiers named in the query, in order of appearance, without duplicates."""
    found: list[tuple[int, Mention]] = []
    for match in _BACKTICKS.finditer(query):
        inner = match.group(2).strip()
        if _is_path(inner):
            found.append((match.start(), Mention(inner.lstrip("./"), "file", explicit=True)))
        elif name := _clean_symbol(inner):
            found.append((match.start(), Mention(name, "symbol", explicit=True)))
    # The rest of the text, with backticked spans blanked so nothing is found twice.
    rest = _BACKTICKS.sub(lambda m: " " * len(m.group()), query)
    taken: list[range] = []

    def claim(pattern: re.Pattern[str], kind: MentionKind, accept: Any = None) -> None:
        for match in pattern.finditer(rest):
            span = range(match.start(1), match.end(1))
            if any(span.start < t.stop and t.start < span.stop for t in taken):
                continue
            text = match.group(1)
            if accept is not None and not accept(text, match.start(1)):
                continue
            taken.append(span)
            found.append((match.start(1), Mention(text.lstrip("./") if kind == "file" else text, kind)))

    claim(_PATH, "file", lambda text, _: _is_path(text))
    claim(_DOTTED, "symbol", lambda text, _: any(len(p) > 1 for p in re.split(r"\.|::", text)))
    claim(_CALL, "symbol")
    claim(_SNAKE, "symbol")
    claim(_CAMEL, "symbol")
    claim(_CAPITALISED, "type", lambda _, start: not _SENTENCE_START.search(rest[:start]))
    found.sort(key=lambda item: item[0])
    seen: set[tuple[str, str]] = set()
    out: list[Mention] = []
    for _, mention in found:
        if (mention.kind, mention.text) not in seen:
            seen.add((mention.kind, mention.text))
            out.append(mention)
    return out


@dataclass(slots=True)
class AnchorSet:
    """Resolved anchors: node key -> (node, tier, reasons); `unresolved` waits for workspace/symbol."""

    nodes: dict[str, Node] = field(default_factory=dict)
    tiers: dict[str, int] = field(default_factory=dict)
    reasons: dict[str, list[str]] = field(default_factory=dict)
    # Per file mention, the candidate node keys in document order (seeds.py picks the best).
    file_groups: list[list[str]] = field(default_factory=list)
    # Per symbol mention, its candidates in lookup order (seeds.py keeps the best max_symbols).
    symbol_groups: list[list[str]] = field(default_factory=list)
    # Classes named by weak mentions: candidates with a bonus, no tier.
    weak: list[str] = field(default_factory=list)
    unresolved: list[Mention] = field(default_factory=list)

    def add(self, node: Node, tier: int, reason: str) -> None:
        """Add (or raise the tier of) an anchor."""
        self.nodes.setdefault(node.key, node)
        self.tiers[node.key] = max(tier, self.tiers.get(node.key, 0))
        reasons = self.reasons.setdefault(node.key, [])
        if reason not in reasons:
            reasons.append(reason)

    def add_group(self, nodes: list[Node], reasons: tuple[str, ...] = (REASON_SYMBOL,)) -> None:
        """One symbol mention's candidates, best first."""
        for node in nodes:
            for reason in reasons:
                self.add(node, TIER_SYMBOL, reason)
        self.symbol_groups.append([n.key for n in nodes])

    def add_weak(self, node: Node) -> None:
        """A class a weak mention names."""
        self.add(node, TIER_NONE, REASON_MENTION)
        if node.key not in self.weak:
            self.weak.append(node.key)


def resolve_mentions(mentions: Iterable[Mention], catalog: Catalog, *, max_symbols: int) -> AnchorSet:
    """Resolve mentions through the index (blocking: run in a worker thread)."""
    anchors = AnchorSet()
    for mention in mentions:
        if mention.kind == "file":
            if not _resolve_file(mention, catalog, anchors):
                anchors.unresolved.append(mention)
            continue
        symbols = _matching_symbols(mention, catalog, max_symbols * _CANDIDATES_PER_ANCHOR)
        if mention.kind == "type":
            for node in symbols[:max_symbols]:
                anchors.add_weak(node)
        elif symbols:
            anchors.add_group(symbols)
        else:
            anchors.unresolved.append(mention)
    return anchors


def _matching_symbols(mention: Mention, catalog: Catalog, limit: int) -> list[Node]:
    wanted = mention.text.replace("::", ".")
    last = wanted.rsplit(".", 1)[-1]
    found = catalog.store.lookup_symbols(wanted, limit=max(limit, 20))
    if mention.kind == "type":
        found = [s for s in found if s.kind in TYPE_KINDS and s.name == last]
    else:
        exact = [s for s in found if s.name == last]
        # `OPTIONS`, `SERVER_NAME`: constants and keys, not the methods spelled in lower case.
        found = exact or ([] if last.isupper() else found)
    return [symbol_node(s) for s in found[:limit]]


def _resolve_file(mention: Mention, catalog: Catalog, anchors: AnchorSet) -> bool:
    fragment = mention.text.strip("/")
    files = [
        f
        for f in catalog.store.files_matching(fragment, limit=20)
        if f.path == fragment or f.path.endswith("/" + fragment)
    ]
    for record in files[:3]:
        symbols = [s for s in catalog.store.symbols_in_file(record.path) if s.kind in CHUNKED_KINDS]
        nodes = [symbol_node(s) for s in symbols] or [chunk_node(c) for c in catalog.store.chunks_in_file(record.path)]
        for node in nodes:
            anchors.add(node, TIER_FILE, REASON_FILE)
        anchors.file_groups.append([n.key for n in nodes])
    return bool(files)


async def resolve_with_workspace_symbols(
    anchors: AnchorSet, catalog: Catalog, lsp: LspCalls, languages: Iterable[str], *, max_symbols: int
) -> None:
    """Ask workspace/symbol for identifiers the index does not know (symbols it may hold inside others)."""
    pending = [m for m in anchors.unresolved if m.kind == "symbol"]
    if not pending:
        return
    langs = sorted(set(languages))
    answers: dict[tuple[int, int], Any] = {}

    async def ask(i: int, j: int, mention: Mention, language: str) -> None:
        last = mention.text.replace("::", ".").rsplit(".", 1)[-1]
        answers[i, j] = await lsp.call(language, "workspace/symbol", {"query": last})

    async with anyio.create_task_group() as tg:
        for i, mention in enumerate(pending):
            for j, language in enumerate(langs):
                tg.start_soon(ask, i, j, mention, language)
    for i, mention in enumerate(pending):
        last = mention.text.replace("::", ".").rsplit(".", 1)[-1]
        nodes: list[Node] = []
        for j in range(len(langs)):
            items = answers.get((i, j))
            for item in items if isinstance(items, list) else []:
                node = await anyio.to_thread.run_sync(_workspace_item_node, item, last, catalog)
                if node is not None and node.key not in {n.key for n in nodes}:
                    nodes.append(node)
        if nodes:
            anchors.add_group(nodes[: max_symbols * _CANDIDATES_PER_ANCHOR], (REASON_SYMBOL, REASON_WORKSPACE))
            anchors.unresolved.remove(mention)


def _workspace_item_node(item: Any, name: str, catalog: Catalog) -> Node | None:
    if not isinstance(item, Mapping) or item.get("name") != name:
        return None
    location = item.get("location")
    if not isinstance(location, Mapping):
        return None
    path = catalog.path_of_uri(location.get("uri"))
    start = location.get("range", {}).get("start", {}) if isinstance(location.get("range"), Mapping) else {}
    line = start.get("line") if isinstance(start, Mapping) else None
    if path is None or not isinstance(line, int):
        return None
    return catalog.symbol_at(path, line)
