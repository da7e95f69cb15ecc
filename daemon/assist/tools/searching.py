"""search_code: the daemon's hybrid search, answered as `path:line` hits a model reads well."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from lensmux.daemon.assist.errors import ToolError
from lensmux.daemon.assist.lsp.positions import source_line
from lensmux.daemon.assist.lsp.workspace import Workspace
from lensmux.daemon.assist.tools.navigation import Answer
from lensmux.daemon.control import ControlError

HybridSearch = Callable[[dict[str, Any]], Awaitable[Any]]


def _int_arg(args: dict[str, Any], name: str, default: int | None, low: int, high: int) -> int | None:
    value = args.get(name, default)
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
        raise ToolError(f"{name} must be an integer from {low} to {high}")
    return value


async def search_code(ws: Workspace, args: dict[str, Any], hybrid: HybridSearch) -> Answer:
    """Hybrid search over the root's index; with budget_tokens, the assembled context too."""
    query = args.get("query")
    if not isinstance(query, str) or not query.strip():
        raise ToolError("query must say what to look for, e.g. 'where is the config file parsed'")
    top_k = _int_arg(args, "top_k", 10, 1, 50)
    budget = _int_arg(args, "budget_tokens", None, 100, 100_000)
    params: dict[str, Any] = {"query": query, "root": str(ws.root), "top_k": top_k}
    if budget is not None:
        params["context"] = {"format": "markdown", "budget_tokens": budget}
    try:
        response = await hybrid(params)
    except ControlError as exc:
        raise ToolError(f"search failed: {exc}") from exc
    # Only now: lensmux.graph.search's package brings the search stack, which the search above loaded.
    from lensmux.graph.search.answer.reasons import describe_reasons

    hits = []
    for sym in response.get("ranked_symbols", [])[: top_k or 10]:
        path = Path(sym["file_path"])
        path = path if path.is_absolute() else ws.root / path
        rng = sym.get("range") or {}
        line = int((rng.get("start") or {}).get("line", 0)) + 1
        end_line = int((rng.get("end") or {}).get("line", line - 1)) + 1
        hits.append({"path": ws.rel(path), "line": line, "end_line": end_line, "symbol": sym.get("name", ""),
                     "kind": sym.get("kind", ""), "score": round(float(sym.get("score", 0.0)), 4),
                     "reasons": list(sym.get("reasons") or [])})  # fmt: skip
    structured: dict[str, Any] = {"query": query, "hits": hits, "degraded": bool(response.get("degraded")),
                                  "warnings": list(response.get("warnings") or []),
                                  "coverage": float(response.get("coverage", 1.0)),
                                  "shared": response.get("shared")}  # fmt: skip
    lines = [f"{len(hits)} {'result' if len(hits) == 1 else 'results'} for {query!r}:"]
    for rank, hit in enumerate(hits, 1):
        text = (
            source_line(await ws.lines(ws.root / hit["path"]), hit["line"])
            if not Path(hit["path"]).is_absolute()
            else ""
        )
        reason = describe_reasons(hit["reasons"])
        lines.append(f"{rank}. {hit['path']}:{hit['line']}  {hit['kind']} {hit['symbol']}  ({reason})")
        if text:
            lines.append(f"     {text}")
    shared = structured["shared"]
    if isinstance(shared, dict):
        lines.append(f"(unchanged files answered from the team's index of commit {str(shared.get('commit'))[:12]})")
    for warning in structured["warnings"]:
        lines.append(f"warning: {warning}")
    context = response.get("context")
    if isinstance(context, dict) and isinstance(context.get("context"), str):
        structured["context"] = context["context"]
        lines += ["", context["context"]]
    return "\n".join(lines), structured
