"""Where a tool should ask: {file, line, column} or {symbol, file?} to one LSP position.

Models are bad at columns, so a symbol is accepted anywhere a position is:
its name is looked up through `workspace/symbol` and in the source files that
mention it, and each candidate file's `documentSymbol` gives the exact place.
A name defined once just works; several definitions are an error listing them
as `path:line` so the model can pick one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lensmux.daemon.assist.errors import ToolError
from lensmux.daemon.assist.lsp.positions import first_code_column, from_lsp, to_lsp
from lensmux.daemon.assist.lsp.workspace import Workspace
from lensmux.daemon.mux.instance import Instance
from lensmux.daemon.paths import uri_to_path

# Files asked for their symbols when resolving one name.
MAX_CANDIDATE_FILES = 40
HEADER_SUFFIXES = frozenset({".h", ".hh", ".hpp", ".hxx", ".h++", ".inl"})
C_FAMILY = frozenset({".c", ".cc", ".cpp", ".cxx", ".c++", ".m", ".mm"}) | HEADER_SUFFIXES
# LSP SymbolKind numbers that define something a model would name.
DEFINING_KINDS = frozenset({2, 5, 6, 9, 10, 11, 12, 22, 23, 26})
KIND_NAMES = {
    1: "file", 2: "module", 3: "namespace", 4: "package", 5: "class", 6: "method", 7: "property", 8: "field",
    9: "constructor", 10: "enum", 11: "interface", 12: "function", 13: "variable", 14: "constant", 15: "string",
    16: "number", 17: "boolean", 18: "array", 19: "object", 20: "key", 21: "null", 22: "enum member",
    23: "struct", 24: "event", 25: "operator", 26: "type parameter",
}  # fmt: skip


@dataclass(frozen=True, slots=True)
class Target:
    """One place to ask about: a file and an LSP position in it."""

    path: Path
    position: dict[str, int]
    line: int
    column: int
    name: str | None = None


@dataclass(frozen=True, slots=True)
class Candidate:
    """A definition of a name found in one file."""

    path: Path
    position: dict[str, int]
    kind: int
    container: str


def kind_name(kind: Any) -> str:
    """A SymbolKind as a word."""
    return KIND_NAMES.get(kind, "symbol") if isinstance(kind, int) else "symbol"


def flatten_symbols(result: Any, container: str = "") -> list[tuple[dict[str, Any], str, int]]:
    """DocumentSymbol trees or SymbolInformation lists as (symbol, container, depth), in order."""
    out: list[tuple[dict[str, Any], str, int]] = []

    def walk(items: Any, parent: str, depth: int) -> None:
        for item in items if isinstance(items, list) else []:
            if not isinstance(item, dict) or not isinstance(item.get("name"), str):
                continue
            owner = parent or str(item.get("containerName") or "")
            out.append((item, owner, depth))
            walk(item.get("children"), item["name"], depth + 1)

    walk(result, container, 0)
    return out


def symbol_start(symbol: dict[str, Any]) -> dict[str, int] | None:
    """Where a symbol's name starts: selectionRange, else range, else location.range."""
    for rng in (symbol.get("selectionRange"), symbol.get("range"), (symbol.get("location") or {}).get("range")):
        start = rng.get("start") if isinstance(rng, dict) else None
        if isinstance(start, dict):
            return start
    return None


def split_name(name: str) -> tuple[str, str | None]:
    """`Class.method` / `ns::func` into (leaf, container)."""
    parts = [p for p in re.split(r"::|\.|#", name.strip()) if p]
    if not parts:
        raise ToolError("`symbol` must be a name such as `parse_config` or `Parser.parse`")
    return parts[-1], parts[-2] if len(parts) > 1 else None


def _matches(symbol: dict[str, Any], owner: str, leaf: str, container: str | None) -> bool:
    name = str(symbol["name"]).split("(")[0].strip()
    if name != leaf and not name.endswith(f"::{leaf}") and not name.endswith(f".{leaf}"):
        return False
    return container is None or owner.rsplit("::", 1)[-1].rsplit(".", 1)[-1] == container or container in name


async def document_symbols(ws: Workspace, path: Path) -> tuple[Instance, list[tuple[dict[str, Any], str, int]]]:
    """The file's symbols as the shared server sees them."""
    inst = ws.instance(path)
    uri = await ws.open(inst, path)
    result = await ws.request(inst, "textDocument/documentSymbol", {"textDocument": {"uri": uri}})
    return inst, flatten_symbols(result)


async def _workspace_candidates(ws: Workspace, leaf: str) -> tuple[list[Path], set[str]]:
    """Files where servers' workspace/symbol finds `leaf`, and the servers that found it."""
    files: list[Path] = []
    answered: set[str] = set()
    for inst in await ws.servers_present():
        try:
            result = await ws.workspace_symbol(inst, leaf)
        except ToolError:
            continue
        for sym in result:
            if not isinstance(sym, dict) or str(sym.get("name", "")).split("(")[0] != leaf:
                continue
            uri = (sym.get("location") or {}).get("uri")
            path = uri_to_path(uri) if isinstance(uri, str) else None
            if path is not None and path.is_relative_to(ws.root):
                answered.add(inst.key.server)
                if path not in files:
                    files.append(path)
    return files, answered


async def find_candidates(ws: Workspace, name: str, file: str | None = None) -> list[Candidate]:
    """Every definition of `name` (in `file` when given), best kinds first."""
    leaf, container = split_name(name)
    if file is not None:
        files = [ws.file(file)]
    else:
        files, answered = await _workspace_candidates(ws, leaf)
        # Where a server's workspace/symbol knew nothing (clangd without a compilation
        # database indexes only open files), the files that mention the name are asked.
        pool = [p for p in await ws.source_files() if ws.server_name(p) not in answered]
        for path in await ws.files_mentioning(leaf, pool):
            if path not in files:
                files.append(path)
        files = files[:MAX_CANDIDATE_FILES]
    found: list[Candidate] = []
    for path in files:
        try:
            _inst, symbols = await document_symbols(ws, path)
        except ToolError:
            if file is not None:
                raise
            continue
        for symbol, owner, _depth in symbols:
            start = symbol_start(symbol)
            if start is not None and _matches(symbol, owner, leaf, container):
                found.append(Candidate(path, start, int(symbol.get("kind") or 0), owner))
    # A C declaration in a header and its definition in a .c file are one symbol: keep the definition.
    if any(c.path.suffix.lower() not in HEADER_SUFFIXES for c in found):
        found = [c for c in found if c.path.suffix.lower() not in HEADER_SUFFIXES]
    # Imports and variables that merely share the name give way to real definitions.
    if any(c.kind in DEFINING_KINDS for c in found):
        found = [c for c in found if c.kind in DEFINING_KINDS]
    unique: dict[tuple[Path, int], Candidate] = {}
    for cand in found:
        unique.setdefault((cand.path, cand.position["line"]), cand)
    return list(unique.values())


async def resolve(ws: Workspace, args: dict[str, Any]) -> Target:
    """The position a tool's arguments name."""
    symbol = args.get("symbol")
    line = args.get("line")
    if isinstance(symbol, str) and symbol.strip() and line is None:
        return await resolve_symbol(ws, symbol, args.get("file"))
    if args.get("file") is None or line is None:
        raise ToolError("give either `symbol` (a name, optionally with `file`) or `file` with `line` (and `column`)")
    path = ws.file(args["file"])
    lines = await ws.lines(path)
    if not isinstance(line, int) or not 1 <= line <= max(len(lines), 1):
        raise ToolError(f"line must be from 1 to {len(lines)} in {ws.rel(path)}")
    column = args.get("column")
    if column is None:
        text = lines[line - 1] if lines else ""
        column = _name_column(text, symbol) if isinstance(symbol, str) else first_code_column(text)
    if not isinstance(column, int) or column < 1:
        raise ToolError("column must be a positive integer (1 is the first character of the line)")
    return Target(path, to_lsp(lines, line, column), line, column, symbol if isinstance(symbol, str) else None)


def _name_column(text: str, symbol: str) -> int:
    leaf, _ = split_name(symbol)
    match = re.search(rf"\b{re.escape(leaf)}\b", text)
    return match.start() + 1 if match else first_code_column(text)


async def resolve_symbol(ws: Workspace, name: str, file: Any = None) -> Target:
    """A name to its one definition; ToolError listing the candidates when there are several."""
    if file is not None and not isinstance(file, str):
        raise ToolError("`file` must be a path")
    found = await find_candidates(ws, name, file)
    where = f" in {file}" if file else f" under {ws.root}"
    if not found:
        raise ToolError(
            f"symbol {name!r} not found{where}. Try workspace_symbols with part of the name, "
            "or give file, line and column."
        )
    if len(found) > 1:
        rows = []
        for cand in found:
            line, _col = from_lsp(await ws.lines(cand.path), cand.position)
            owner = f" in {cand.container}" if cand.container else ""
            rows.append(f"  {ws.rel(cand.path)}:{line}  {kind_name(cand.kind)} {name}{owner}")
        raise ToolError(
            f"symbol {name!r} is ambiguous: {len(found)} definitions{where}:\n"
            + "\n".join(rows)
            + "\nCall again with `file` set to one of these paths, or with file, line and column."
        )
    cand = found[0]
    line, column = from_lsp(await ws.lines(cand.path), cand.position)
    return Target(cand.path, cand.position, line, column, name)
