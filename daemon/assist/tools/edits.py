"""rename_preview: the server's WorkspaceEdit applied to copies of the texts, shown as a unified diff.

Nothing is written: not to disk, not to any editor (the edit never goes out
as `workspace/applyEdit`; it is the answer to the daemon's own request).
"""

from __future__ import annotations

import difflib
import re
from pathlib import Path
from typing import Any

from lensmux.daemon.assist.errors import ToolError
from lensmux.daemon.assist.lsp.positions import chars_from_utf16
from lensmux.daemon.assist.lsp.workspace import Workspace
from lensmux.daemon.assist.tools.navigation import Answer, _at, _where, warm
from lensmux.daemon.paths import uri_to_path

_IDENT = re.compile(r"^[^\W\d]\w*$")


def _edits_by_uri(edit: Any) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    if not isinstance(edit, dict):
        return out
    for uri, edits in (edit.get("changes") or {}).items():
        out.setdefault(uri, []).extend(e for e in edits if isinstance(e, dict))
    for change in edit.get("documentChanges") or []:
        if isinstance(change, dict) and "edits" in change:
            uri = (change.get("textDocument") or {}).get("uri")
            if isinstance(uri, str):
                out.setdefault(uri, []).extend(e for e in change["edits"] if isinstance(e, dict))
    return out


def _offset(lines: list[str], position: dict[str, Any]) -> int:
    row = min(int(position.get("line", 0)), len(lines))
    before = sum(len(line) + 1 for line in lines[:row])
    text = lines[row] if row < len(lines) else ""
    return before + chars_from_utf16(text, int(position.get("character", 0)))


def apply_text_edits(lines: list[str], edits: list[dict[str, Any]]) -> str:
    """TextEdits (all relative to the original text) applied from the last to the first."""
    text = "\n".join(lines)
    spans = []
    for edit in edits:
        rng = edit.get("range") or {}
        spans.append((_offset(lines, rng.get("start") or {}), _offset(lines, rng.get("end") or {}), edit))
    for start, end, edit in sorted(spans, key=lambda s: (s[0], s[1]), reverse=True):
        text = text[:start] + str(edit.get("newText", "")) + text[end:]
    return text


async def rename_preview(ws: Workspace, args: dict[str, Any]) -> Answer:
    """The diff a rename would make, writing nothing."""
    new_name = args.get("new_name")
    if not isinstance(new_name, str) or not _IDENT.match(new_name):
        raise ToolError("new_name must be a plain identifier such as `parse_options`")
    target, inst, params = await _at(ws, args)
    await warm(ws, inst, target)
    params["newName"] = new_name
    edit = await ws.request(inst, "textDocument/rename", params)
    by_uri = _edits_by_uri(edit)
    if not by_uri:
        raise ToolError(f"nothing to rename at {_where(ws, target)}; point at the symbol's name")
    diffs: list[str] = []
    files: list[dict[str, Any]] = []
    for uri in sorted(by_uri):
        path: Path | None = uri_to_path(uri)
        if path is None:
            continue
        lines = await ws.lines(path)
        before = "\n".join(lines)
        after = apply_text_edits(lines, by_uri[uri])
        rel = ws.rel(path)
        diffs.extend(
            difflib.unified_diff(
                before.splitlines(keepends=True), after.splitlines(keepends=True), f"a/{rel}", f"b/{rel}"
            )
        )
        if diffs and not diffs[-1].endswith("\n"):
            diffs[-1] += "\n"
        files.append({"path": rel, "edits": len(by_uri[uri])})
    diff = "".join(diffs)
    total = sum(f["edits"] for f in files)
    text = (
        f"Renaming {_where(ws, target)} to {new_name} would change {total} places in {len(files)} files "
        f"(preview only: nothing was written):\n{diff}"
    )
    return text, {"target": {"path": ws.rel(target.path), "line": target.line, "column": target.column},
                  "new_name": new_name, "files": files, "total_edits": total, "diff": diff}  # fmt: skip
