"""Fakes for the search tests: the shared embedder and symbol source, and an ast "language server".

FakeGateway answers prepareCallHierarchy, incomingCalls, outgoingCalls, references,
definition and workspace/symbol for small Python trees by reading their ast, so the
expansion logic can be tested without a server, and it injects faults on demand
(no server, errors, hangs, missing methods). The real-server check is test_search_pyright.py.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

import anyio
import anyio.lowlevel
from support.graph_fakes import AstSymbolSource, HashingEmbedder
from support.graph_fakes import lsp_range as _rng

from lensmux.graph.search import GatewayError

METHOD_NOT_FOUND = -32601


class FakeEmbedder(HashingEmbedder):
    """The hashing embedder; count_tokens counts words and punctuation, as a subword tokenizer would more."""

    def count_tokens(self, text: str) -> int:
        return len(re.findall(r"\w+|[^\w\s]", text))


class FakeSymbolSource(AstSymbolSource):
    """documentSymbol for Python from the ast, functions and classes only; None for other languages."""

    def __init__(self) -> None:
        super().__init__(variables=False)


@dataclass(frozen=True)
class _Def:
    name: str
    kind: int
    path: Path
    line: int
    col: int
    start: tuple[int, int]
    end: tuple[int, int]

    def item(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "kind": self.kind,
            "uri": self.path.as_uri(),
            "range": _rng(*self.start, *self.end),
            "selectionRange": _rng(self.line, self.col, self.line, self.col + len(self.name)),
        }


@dataclass(frozen=True)
class _Use:
    name: str
    path: Path
    line: int
    col: int
    owner: _Def | None  # innermost def holding the use
    call: bool

    def location(self) -> dict[str, Any]:
        return {"uri": self.path.as_uri(), "range": _rng(self.line, self.col, self.line, self.col + len(self.name))}


class _Project(ast.NodeVisitor):
    """Definitions and name uses of every .py file under a root."""

    def __init__(self, root: Path) -> None:
        self.defs: list[_Def] = []
        self.uses: list[_Use] = []
        self._stack: list[_Def] = []
        self._path = root
        self._lines: list[str] = []
        self._calls: set[int] = set()
        for path in sorted(root.rglob("*.py")):
            self._path, text = path.resolve(), path.read_text()
            self._lines = text.split("\n")
            self.visit(ast.parse(text))

    def _define(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> None:
        kind = 5 if isinstance(node, ast.ClassDef) else (6 if self._stack and self._stack[-1].kind == 5 else 12)
        assert node.end_lineno is not None and node.end_col_offset is not None
        line = node.lineno - 1
        found = _Def(node.name, kind, self._path, line, self._lines[line].find(node.name),
                     (line, node.col_offset), (node.end_lineno - 1, node.end_col_offset))  # fmt: skip
        self.defs.append(found)
        self._stack.append(found)
        self.generic_visit(node)
        self._stack.pop()

    visit_FunctionDef = visit_AsyncFunctionDef = visit_ClassDef = _define

    def visit_Assign(self, node: ast.Assign) -> None:
        # Module and class attributes: workspace/symbol knows them, the fake symbol source does not.
        if not self._stack or self._stack[-1].kind == 5:
            for target in node.targets:
                if isinstance(target, ast.Name) and target.end_col_offset is not None:
                    line = target.lineno - 1
                    span = (line, target.col_offset), (line, target.end_col_offset)
                    self.defs.append(_Def(target.id, 13, self._path, line, target.col_offset, *span))
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        self._calls.add(id(node.func))
        self.generic_visit(node)

    def _use(self, name: str, line: int, col: int, node: ast.AST) -> None:
        owner = self._stack[-1] if self._stack else None
        self.uses.append(_Use(name, self._path, line, col, owner, id(node) in self._calls))

    def visit_Name(self, node: ast.Name) -> None:
        self._use(node.id, node.lineno - 1, node.col_offset, node)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        assert node.end_col_offset is not None and node.end_lineno is not None
        self._use(node.attr, node.end_lineno - 1, node.end_col_offset - len(node.attr), node)
        self.generic_visit(node)

    def name_at(self, path: Path, line: int, char: int) -> str | None:
        for d in self.defs:
            if (d.path, d.line) == (path, line) and d.col <= char <= d.col + len(d.name):
                return d.name
        for u in self.uses:
            if (u.path, u.line) == (path, line) and u.col <= char <= u.col + len(u.name):
                return u.name
        return None

    def named(self, name: str) -> list[_Def]:
        return [d for d in self.defs if d.name == name]


def _uri_path(uri: str) -> Path:
    return Path(unquote(urlparse(uri).path))


class FakeGateway:
    """An LspGateway answering from the ast of a Python tree, with fault injection."""

    def __init__(
        self,
        root: Path,
        *,
        unavailable: str | None = None,
        failing: str | None = None,
        failing_every: int = 0,
        hanging: bool = False,
        delay: float = 0.0,
        broken: bool = False,
        outgoing: bool = True,
        call_hierarchy: bool = True,
        settled: bool = True,
    ) -> None:
        self.project = _Project(root)
        self.settled = settled
        self.unavailable = unavailable
        self.failing = failing
        self.failing_every = failing_every
        self.hanging = hanging
        self.delay = delay
        self.broken = broken
        self.outgoing = outgoing
        self.call_hierarchy = call_hierarchy
        self.requests: list[str] = []

    def unavailable_reason(self, root: Path, language: str) -> str | None:
        return self.unavailable

    def answers_settled(self, root: Path, language: str) -> bool:
        return self.settled

    async def capabilities(self, root: Path, language: str) -> Mapping[str, Any]:
        await anyio.lowlevel.checkpoint()
        return {"callHierarchyProvider": self.call_hierarchy, "referencesProvider": True, "definitionProvider": True}

    async def request(
        self, root: Path, language: str, method: str, params: Mapping[str, Any], *, timeout: float
    ) -> Any:
        self.requests.append(method)
        number = len(self.requests)
        if self.hanging:
            await anyio.sleep_forever()
        await anyio.sleep(self.delay)
        if self.broken:
            raise RuntimeError("bug in the gateway")
        if self.failing is not None:
            raise GatewayError(self.failing)
        if self.failing_every and number % self.failing_every == 0:
            raise GatewayError("injected occasional failure")
        if method == "callHierarchy/outgoingCalls" and not self.outgoing:
            raise GatewayError("unhandled method callHierarchy/outgoingCalls", code=METHOD_NOT_FOUND)
        return self._answer(method, params)

    def _answer(self, method: str, params: Mapping[str, Any]) -> Any:
        p = self.project
        if method == "workspace/symbol":
            return [{"name": d.name, "kind": d.kind, "location": {"uri": d.path.as_uri(), "range": d.item()["range"]}}
                    for d in p.named(params["query"])]  # fmt: skip
        if "item" in params:
            item = params["item"]
            target = next(d for d in p.defs if d.item() == item)
            if method == "callHierarchy/incomingCalls":
                return self._incoming(target)
            return self._outgoing(target)
        path = _uri_path(params["textDocument"]["uri"])
        name = p.name_at(path, params["position"]["line"], params["position"]["character"])
        if name is None:
            return None
        if method == "textDocument/prepareCallHierarchy":
            return [d.item() for d in p.named(name) if (d.path, d.line) == (path, params["position"]["line"])]
        if method == "textDocument/references":
            return [u.location() for u in p.uses if u.name == name]
        if method == "textDocument/definition":
            return [{"uri": d.path.as_uri(), "range": d.item()["selectionRange"]} for d in p.named(name)]
        raise GatewayError(f"unhandled method {method}", code=METHOD_NOT_FOUND)

    def _incoming(self, target: _Def) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for use in self.project.uses:
            if use.call and use.name == target.name:
                caller = use.owner.item() if use.owner else {
                    "name": use.path.stem, "kind": 2, "uri": use.path.as_uri(),
                    "range": _rng(0, 0, 999, 0), "selectionRange": _rng(0, 0, 0, 0),
                }  # fmt: skip
                out.append({"from": caller, "fromRanges": [use.location()["range"]]})
        return out

    def _outgoing(self, source: _Def) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for use in self.project.uses:
            if use.call and use.owner == source:
                for callee in self.project.named(use.name):
                    out.append({"to": callee.item(), "fromRanges": [use.location()["range"]]})
        return out


class LearnerGateway(FakeGateway):
    """The fake as the daemon's learner sees it: clients always quiet, nothing kept open, one server."""

    def quiet(self, seconds: float) -> bool:
        return True

    def noise(self, seconds: float) -> str | None:
        return None

    async def release_documents(self) -> int:
        return 0

    def server_languages(self) -> list[tuple[str, ...]]:
        return [("python",)]
