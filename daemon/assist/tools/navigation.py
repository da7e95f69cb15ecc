"""find_definition, find_references, hover, call_hierarchy: questions about one position."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lensmux.daemon.assist.errors import ToolError
from lensmux.daemon.assist.lsp.locations import location_rows, normalise, render_rows
from lensmux.daemon.assist.lsp.positions import from_lsp, source_line
from lensmux.daemon.assist.lsp.resolve import HEADER_SUFFIXES, Target, kind_name, resolve, split_name
from lensmux.daemon.assist.lsp.workspace import Workspace
from lensmux.daemon.mux.instance import Instance
from lensmux.daemon.paths import uri_to_path

Answer = tuple[str, dict[str, Any]]
# Files a C-family question opens so the server's index knows the bodies and callers.
WARM_FILES = 30


def _where(ws: Workspace, target: Target) -> str:
    label = f"{target.name} at " if target.name else ""
    return f"{label}{ws.rel(target.path)}:{target.line}:{target.column}"


def _target_row(ws: Workspace, target: Target) -> dict[str, Any]:
    return {"path": ws.rel(target.path), "line": target.line, "column": target.column}


async def _word_at(ws: Workspace, target: Target) -> str | None:
    if target.name:
        return split_name(target.name)[0]
    lines = await ws.lines(target.path)
    text = lines[target.line - 1] if target.line <= len(lines) else ""
    start = end = target.column - 1
    while start > 0 and (text[start - 1].isalnum() or text[start - 1] == "_"):
        start -= 1
    while end < len(text) and (text[end].isalnum() or text[end] == "_"):
        end += 1
    return text[start:end] or None


async def warm(ws: Workspace, inst: Instance, target: Target) -> None:
    """Open the server's files that name the symbol before a cross-file question.

    clangd without a compilation database knows bodies and callers only in open
    files, and pyright in its default openFilesOnly mode answers references and
    renames from the files it has loaded: both then miss places on disk.
    """
    word = await _word_at(ws, target)
    if not word:
        return
    server = inst.key.server
    pool = [p for p in await ws.source_files() if ws.server_name(p) == server]
    for path in (await ws.files_mentioning(word, pool))[:WARM_FILES]:
        await ws.open(inst, path)
    await ws.discovered(inst)


async def _at(ws: Workspace, args: dict[str, Any]) -> tuple[Target, Instance, dict[str, Any]]:
    target = await resolve(ws, args)
    inst = ws.instance(target.path)
    uri = await ws.open(inst, target.path)
    return target, inst, {"textDocument": {"uri": uri}, "position": target.position}


async def find_definition(ws: Workspace, args: dict[str, Any]) -> Answer:
    """Where the symbol at a position (or of a name) is defined; for C, the body rather than the header."""
    target, inst, params = await _at(ws, args)
    await warm(ws, inst, target)
    result = await ws.request(inst, "textDocument/definition", params)
    rows = await location_rows(ws, result)
    if rows and all(Path(r["path"]).suffix.lower() in HEADER_SUFFIXES for r in rows):
        # Only the declaration is known from here: ask again from the declaration itself,
        # where clangd answers with the definition once it has seen the body.
        for uri, rng in normalise(result):
            path = uri_to_path(uri)
            if path is None:
                continue
            decl_uri = await ws.open(inst, path)
            again = await ws.request(
                inst, "textDocument/definition", {"textDocument": {"uri": decl_uri}, "position": rng["start"]}
            )
            better = [
                r for r in await location_rows(ws, again) if Path(r["path"]).suffix.lower() not in HEADER_SUFFIXES
            ]
            if better:
                rows = better
                break
    if not rows:
        raise ToolError(f"no definition found for {_where(ws, target)}; check the position or try workspace_symbols")
    text = f"Definition of {_where(ws, target)}:\n" + render_rows(rows)
    return text, {"target": _target_row(ws, target), "locations": rows}


async def find_references(ws: Workspace, args: dict[str, Any]) -> Answer:
    """Every reference to the symbol, its declaration included."""
    target, inst, params = await _at(ws, args)
    await warm(ws, inst, target)
    params["context"] = {"includeDeclaration": True}
    rows = await location_rows(ws, await ws.request(inst, "textDocument/references", params))
    if not rows:
        raise ToolError(f"no references found for {_where(ws, target)}; check the position")
    noun = "reference" if len(rows) == 1 else "references"
    text = f"{len(rows)} {noun} to {_where(ws, target)}:\n" + render_rows(rows)
    return text, {"target": _target_row(ws, target), "locations": rows}


def _hover_text(contents: Any) -> str:
    if isinstance(contents, str):
        return contents
    if isinstance(contents, dict):
        value = contents.get("value")
        lang = contents.get("language")
        return f"```{lang}\n{value}\n```" if lang and isinstance(value, str) else str(value or "")
    if isinstance(contents, list):
        return "\n\n".join(_hover_text(c) for c in contents)
    return ""


async def hover(ws: Workspace, args: dict[str, Any]) -> Answer:
    """The server's hover text (type, signature, documentation)."""
    target, inst, params = await _at(ws, args)
    result = await ws.request(inst, "textDocument/hover", params)
    text = _hover_text(result.get("contents")) if isinstance(result, dict) else ""
    if not text.strip():
        raise ToolError(f"no hover information at {_where(ws, target)}; point at an identifier")
    return f"{_where(ws, target)}:\n{text.strip()}", {"target": _target_row(ws, target), "contents": text.strip()}


async def _item_row(ws: Workspace, item: dict[str, Any], ranges: list[Any]) -> dict[str, Any]:
    path, lines = await ws.lines_of_uri(str(item.get("uri", "")))
    start = (item.get("selectionRange") or item.get("range") or {}).get("start") or {}
    line, _ = from_lsp(lines, start)
    sites = sorted({from_lsp(lines, r["start"])[0] for r in ranges if isinstance(r, dict) and "start" in r})
    return {"name": str(item.get("name", "")), "kind": kind_name(item.get("kind")),
            "path": ws.rel(path) if path else str(item.get("uri")), "line": line,
            "text": source_line(lines, line), "call_lines": sites}  # fmt: skip


async def call_hierarchy(ws: Workspace, args: dict[str, Any]) -> Answer:
    """Callers (incoming) or callees (outgoing) of a function."""
    direction = args.get("direction", "incoming")
    if direction not in ("incoming", "outgoing"):
        raise ToolError("direction must be 'incoming' (callers) or 'outgoing' (callees)")
    target, inst, params = await _at(ws, args)
    await warm(ws, inst, target)
    items = await ws.request(inst, "textDocument/prepareCallHierarchy", params)
    if not isinstance(items, list) or not items:
        raise ToolError(f"{_where(ws, target)} is not a function or method; point at its name")
    item = items[0]
    method = "callHierarchy/incomingCalls" if direction == "incoming" else "callHierarchy/outgoingCalls"
    calls = await ws.request(inst, method, {"item": item})
    rows = []
    for call in calls if isinstance(calls, list) else []:
        other = call.get("from" if direction == "incoming" else "to")
        if isinstance(other, dict):
            # Incoming: the call sites are in the caller; outgoing: in the target item's file.
            if direction == "incoming":
                rows.append(await _item_row(ws, other, call.get("fromRanges") or []))
            else:
                row = await _item_row(ws, other, [])
                _p, own_lines = await ws.lines_of_uri(str(item.get("uri", "")))
                row["call_lines"] = sorted({from_lsp(own_lines, r["start"])[0] for r in call.get("fromRanges") or []})
                rows.append(row)
    rows.sort(key=lambda r: (r["path"], r["line"]))
    name = str(item.get("name", target.name or ""))
    if direction == "incoming":
        label = "caller of" if len(rows) == 1 else "callers of"
    else:
        label = "function called by" if len(rows) == 1 else "functions called by"
    lines = [f"{len(rows)} {label} {name} ({_where(ws, target)}):"]
    for r in rows:
        sites = ", ".join(str(n) for n in r["call_lines"])
        lines.append(f"{r['path']}:{r['line']}  {r['text']}" + (f"  (calls at line {sites})" if sites else ""))
    structured = {"target": _target_row(ws, target), "symbol": name, "direction": direction, "calls": rows}
    return "\n".join(lines), structured
