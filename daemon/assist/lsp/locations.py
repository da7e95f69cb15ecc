"""LSP locations as tools show them: `path:line  source line`, and as structured rows."""

from __future__ import annotations

from typing import Any

from lensmux.daemon.assist.lsp.positions import from_lsp, source_line
from lensmux.daemon.assist.lsp.workspace import Workspace

# Rows a location list shows in text; the structured result has them all up to this many.
MAX_LOCATIONS = 200
TEXT_ROWS = 50


def normalise(result: Any) -> list[tuple[str, dict[str, Any]]]:
    """Location | Location[] | LocationLink[] as (uri, range) pairs."""
    items = result if isinstance(result, list) else [result] if isinstance(result, dict) else []
    out: list[tuple[str, dict[str, Any]]] = []
    for item in items:
        if not isinstance(item, dict):
            continue
        uri = item.get("uri") or item.get("targetUri")
        rng = item.get("range") or item.get("targetSelectionRange") or item.get("targetRange")
        if isinstance(uri, str) and isinstance(rng, dict):
            out.append((uri, rng))
    return out


async def location_row(ws: Workspace, uri: str, rng: dict[str, Any]) -> dict[str, Any] | None:
    """One location as {path, line, column, end_line, text} (1-based), None for a non-file URI."""
    path, lines = await ws.lines_of_uri(uri)
    if path is None:
        return None
    line, column = from_lsp(lines, rng.get("start") or {})
    end_line, _ = from_lsp(lines, rng.get("end") or rng.get("start") or {})
    return {"path": ws.rel(path), "line": line, "column": column, "end_line": end_line,
            "text": source_line(lines, line)}  # fmt: skip


async def location_rows(ws: Workspace, result: Any) -> list[dict[str, Any]]:
    """Every location of a result, in a stable order (path, line, column), duplicates dropped."""
    rows: dict[tuple[str, int, int], dict[str, Any]] = {}
    for uri, rng in normalise(result)[: MAX_LOCATIONS * 2]:
        row = await location_row(ws, uri, rng)
        if row is not None:
            rows.setdefault((row["path"], row["line"], row["column"]), row)
    return [rows[k] for k in sorted(rows)][:MAX_LOCATIONS]


def render_rows(rows: list[dict[str, Any]]) -> str:
    """`path:line  text` lines, at most TEXT_ROWS of them."""
    lines = [f"{r['path']}:{r['line']}  {r['text']}" for r in rows[:TEXT_ROWS]]
    if len(rows) > TEXT_ROWS:
        lines.append(f"... and {len(rows) - TEXT_ROWS} more (see the structured result)")
    return "\n".join(lines)
