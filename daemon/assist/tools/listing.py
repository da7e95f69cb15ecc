"""document_symbols, workspace_symbols, diagnostics: what a file or the workspace contains."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio

from lensmux.daemon.assist.errors import ToolError
from lensmux.daemon.assist.lsp.positions import from_lsp, source_line
from lensmux.daemon.assist.lsp.resolve import document_symbols as symbols_of
from lensmux.daemon.assist.lsp.resolve import kind_name, symbol_start
from lensmux.daemon.assist.lsp.workspace import READY_WAIT, Workspace
from lensmux.daemon.assist.tools import diagnostics as settled
from lensmux.daemon.assist.tools.navigation import Answer
from lensmux.daemon.paths import uri_to_path

MAX_SYMBOLS = 300
# Files whose outlines a workspace_symbols fallback reads.
OUTLINE_FILES = 30
SEVERITIES = {1: "error", 2: "warning", 3: "information", 4: "hint"}
# How long a diagnostics question waits for the server's first report on a file.
DIAGNOSTICS_WAIT = 15.0


async def document_symbols(ws: Workspace, args: dict[str, Any]) -> Answer:
    """The outline of one file, as the server sees its current (possibly unsaved) text."""
    path = ws.file(args.get("file", ""))
    _inst, symbols = await symbols_of(ws, path)
    lines = await ws.lines(path)
    rows = []
    for symbol, owner, depth in symbols[:MAX_SYMBOLS]:
        start = symbol_start(symbol) or {}
        line, _ = from_lsp(lines, start)
        end = ((symbol.get("range") or {}).get("end")) or start
        rows.append({"name": symbol["name"], "kind": kind_name(symbol.get("kind")), "line": line,
                     "end_line": from_lsp(lines, end)[0], "container": owner, "depth": depth,
                     "detail": str(symbol.get("detail") or "")})  # fmt: skip
    rel = ws.rel(path)
    text = [f"{len(rows)} {'symbol' if len(rows) == 1 else 'symbols'} in {rel}:"]
    text += [f"{'  ' * r['depth']}{r['kind']} {r['name']}  {rel}:{r['line']}" for r in rows]
    return "\n".join(text), {"path": rel, "symbols": rows}


async def _symbol_row(ws: Workspace, path: Path, symbol: dict[str, Any], owner: str) -> dict[str, Any]:
    lines = await ws.lines(path)
    start = symbol_start(symbol) or {}
    line, _ = from_lsp(lines, start)
    return {"name": str(symbol["name"]), "kind": kind_name(symbol.get("kind")), "path": ws.rel(path),
            "line": line, "container": owner, "text": source_line(lines, line)}  # fmt: skip


async def _outline_matches(ws: Workspace, server: str, query: str) -> list[dict[str, Any]]:
    """Symbols containing `query` in the outlines of the server's files that mention it.

    The fallback when workspace/symbol knows nothing: pyright answers it only for
    files it has loaded, clangd without a compilation database only for open files.
    """
    pool = [p for p in await ws.source_files() if ws.server_name(p) == server]
    rows = []
    for path in (await ws.files_mentioning(query, pool, fold=True))[:OUTLINE_FILES]:
        try:
            _inst, symbols = await symbols_of(ws, path)
        except ToolError:
            continue
        for symbol, owner, _depth in symbols:
            if query.lower() in str(symbol["name"]).lower():
                rows.append(await _symbol_row(ws, path, symbol, owner))
    return rows


async def workspace_symbols(ws: Workspace, args: dict[str, Any]) -> Answer:
    """Symbols whose names match a query, from every server with files under the root."""
    query = args.get("query")
    if not isinstance(query, str) or not query.strip():
        raise ToolError("query must be a non-empty part of a symbol name")
    query = query.strip()
    rows: list[dict[str, Any]] = []
    instances = await ws.servers_present()
    if not instances:
        raise ToolError(f"no source files of a configured language under {ws.root}")
    for inst in instances:
        found = []
        for sym in await ws.workspace_symbol(inst, query):
            location = sym.get("location") if isinstance(sym, dict) else None
            if not isinstance(location, dict):
                continue
            uri = location.get("uri")
            path = uri_to_path(uri) if isinstance(uri, str) else None
            if path is None or not path.is_relative_to(ws.root):
                continue
            found.append(
                await _symbol_row(
                    ws, path, {**sym, "range": location.get("range")}, str(sym.get("containerName") or "")
                )
            )
        rows += found or await _outline_matches(ws, inst.key.server, query)
    rows.sort(key=lambda r: (r["name"] != query, r["path"], r["line"]))
    rows = rows[:MAX_SYMBOLS]
    if not rows:
        raise ToolError(f"no symbol matches {query!r}; try a shorter part of the name, or search_code")
    text = [f"{len(rows)} {'symbol' if len(rows) == 1 else 'symbols'} matching {query!r}:"]
    text += [f"{r['path']}:{r['line']}  {r['kind']} {r['name']}" for r in rows]
    return "\n".join(text), {"query": query, "symbols": rows}


async def diagnostics(ws: Workspace, args: dict[str, Any]) -> Answer:
    """The server's current errors and warnings for one file."""
    path = ws.file(args.get("file", ""))
    inst = ws.instance(path)
    uri = await ws.open(inst, path)
    doc = inst.documents.get(uri)
    version = doc.version if doc is not None else None
    report = None
    with anyio.move_on_after(DIAGNOSTICS_WAIT + READY_WAIT):
        report = await settled.wait(inst, uri, version)
    if report is None:
        # A server still busy (a background index) answers with what it last said.
        report = settled.latest(inst, uri)
    if report is None:
        raise ToolError(f"{inst.key.server} has not reported diagnostics for {ws.rel(path)} yet; try again shortly")
    lines = await ws.lines(path)
    rows: list[dict[str, Any]] = []
    for diag in report:
        rng = diag.get("range") or {}
        line, column = from_lsp(lines, rng.get("start") or {})
        rows.append({"line": line, "column": column, "end_line": from_lsp(lines, rng.get("end") or {})[0],
                     "severity": SEVERITIES.get(diag.get("severity") or 1, "error"),
                     "message": str(diag.get("message", "")), "source": str(diag.get("source") or ""),
                     "code": str(diag.get("code") or "")})  # fmt: skip
    rows.sort(key=lambda r: (r["line"], r["column"]))
    rel = ws.rel(path)
    if not rows:
        return f"No diagnostics in {rel}.", {"path": rel, "diagnostics": []}
    text = [f"{len(rows)} {'diagnostic' if len(rows) == 1 else 'diagnostics'} in {rel}:"]
    for r in rows:
        text.append(f"{rel}:{r['line']}:{r['column']}  {r['severity']}: {r['message']}")
        text.append(f"    {source_line(lines, r['line'])}")
    return "\n".join(text), {"path": rel, "diagnostics": rows}
