"""The nine tools as assistants see them: names, descriptions, input and output JSON Schemas.

Names and argument shapes are a public interface (assistants' configs and
prompts name them). Input schemas have no top-level oneOf: several clients
reject it; the either/or of position arguments is checked by resolve.py.
"""

from __future__ import annotations

from typing import Any

_STR = {"type": "string"}
_INT = {"type": "integer"}
_UNSAVED = {"type": "array", "items": _STR, "description": "files answered from unsaved editor text"}
POSITION_INPUT: dict[str, Any] = {
    "symbol": {"type": "string", "description": "a name (function, class, Class.method) instead of line/column"},
    "file": {
        "type": "string",
        "description": "path relative to the workspace root (or absolute); "
        "with symbol, picks among several definitions",
    },
    "line": {"type": "integer", "minimum": 1, "description": "1-based line"},
    "column": {
        "type": "integer",
        "minimum": 1,
        "description": "1-based column in characters (optional: "
        "defaults to the symbol's name on that line, else the first non-blank character)",
    },
}
_TARGET = {"type": "object", "properties": {"path": _STR, "line": _INT, "column": _INT}}
_LOCATION = {
    "type": "object",
    "properties": {"path": _STR, "line": _INT, "column": _INT, "end_line": _INT, "text": _STR},
    "required": ["path", "line"],
}


def _obj(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": required}


def _out(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return _obj({**properties, "unsaved_files": _UNSAVED}, required)


_LOCATIONS_OUT = _out({"target": _TARGET, "locations": {"type": "array", "items": _LOCATION}}, ["locations"])
_CALL = {
    "type": "object",
    "properties": {
        "name": _STR,
        "kind": _STR,
        "path": _STR,
        "line": _INT,
        "text": _STR,
        "call_lines": {"type": "array", "items": _INT},
    },
    "required": ["name", "path", "line"],
}
_HIT = _obj(
    {
        "path": _STR,
        "line": _INT,
        "end_line": _INT,
        "symbol": _STR,
        "kind": _STR,
        "score": {"type": "number"},
        "reasons": {"type": "array", "items": _STR},
    },
    ["path", "line", "end_line", "symbol", "kind", "score", "reasons"],
)
_SYMBOL = {
    "type": "object",
    "properties": {
        "name": _STR,
        "kind": _STR,
        "path": _STR,
        "line": _INT,
        "end_line": _INT,
        "container": _STR,
        "depth": _INT,
        "detail": _STR,
        "text": _STR,
    },
    "required": ["name", "kind", "line"],
}
_DIAGNOSTIC = {
    "type": "object",
    "properties": {
        "line": _INT,
        "column": _INT,
        "end_line": _INT,
        "severity": _STR,
        "message": _STR,
        "source": _STR,
        "code": _STR,
    },
    "required": ["line", "severity", "message"],
}

TOOLS: list[dict[str, Any]] = [
    {
        "name": "search_code",
        "description": "Hybrid semantic + keyword + call-graph search over the workspace. Returns ranked hits as "
        "path:line with symbol and reason; with budget_tokens, also the assembled source context. The first call "
        "on a workspace indexes it (progress is reported).",
        "inputSchema": _obj(
            {
                "query": {"type": "string", "description": "what to look for, in words or names"},
                "top_k": {"type": "integer", "minimum": 1, "maximum": 50, "default": 10},
                "budget_tokens": {
                    "type": "integer",
                    "minimum": 100,
                    "maximum": 100000,
                    "description": "also return source context within this budget",
                },
            },
            ["query"],
        ),
        "outputSchema": _out(
            {
                "query": _STR,
                "hits": {"type": "array", "items": _HIT},
                "degraded": {"type": "boolean"},
                "warnings": {"type": "array", "items": _STR},
                "coverage": {
                    "type": "number",
                    "description": "share of the workspace's files indexed when the search ran (below 1 while "
                    "indexing goes on; the workspace's files where the user is come first)",
                },
                "shared": {
                    "type": ["object", "null"],
                    "description": "the team's published index the unchanged files were answered from "
                    "(repository, commit); null when the local index answered alone",
                },
                "context": _STR,
            },
            ["hits"],
        ),
    },
    {
        "name": "find_definition",
        "description": "Where a symbol is defined. Give `symbol` (a name) or file/line/column (1-based). "
        "For C/C++ this is the body in the .c/.cpp file when the server knows it, not only the header.",
        "inputSchema": _obj(POSITION_INPUT, []),
        "outputSchema": _LOCATIONS_OUT,
    },
    {
        "name": "find_references",
        "description": "Every reference to a symbol (declaration included) as path:line with the source line. "
        "Give `symbol` or file/line/column (1-based).",
        "inputSchema": _obj(POSITION_INPUT, []),
        "outputSchema": _LOCATIONS_OUT,
    },
    {
        "name": "hover",
        "description": "Type, signature and documentation of a symbol. Give `symbol` or file/line/column (1-based).",
        "inputSchema": _obj(POSITION_INPUT, []),
        "outputSchema": _out({"target": _TARGET, "contents": _STR}, ["contents"]),
    },
    {
        "name": "call_hierarchy",
        "description": "Callers (direction=incoming, the default) or callees (outgoing) of a function. "
        "Give `symbol` or file/line/column (1-based).",
        "inputSchema": _obj(
            {
                **POSITION_INPUT,
                "direction": {"type": "string", "enum": ["incoming", "outgoing"], "default": "incoming"},
            },
            [],
        ),
        "outputSchema": _out(
            {"target": _TARGET, "symbol": _STR, "direction": _STR, "calls": {"type": "array", "items": _CALL}},
            ["calls"],
        ),
    },
    {
        "name": "rename_preview",
        "description": "The unified diff a rename would make across the workspace. Writes nothing: not to disk, "
        "not to any editor. Give `new_name` and `symbol` or file/line/column (1-based).",
        "inputSchema": _obj(
            {**POSITION_INPUT, "new_name": {"type": "string", "description": "the new identifier"}}, ["new_name"]
        ),
        "outputSchema": _out(
            {
                "target": _TARGET,
                "new_name": _STR,
                "diff": _STR,
                "total_edits": _INT,
                "files": {"type": "array", "items": {"type": "object", "properties": {"path": _STR, "edits": _INT}}},
            },
            ["diff", "files"],
        ),
    },
    {
        "name": "document_symbols",
        "description": "The outline of one file (classes, functions, methods...) with 1-based lines, as the "
        "server sees its current text, unsaved editor changes included.",
        "inputSchema": _obj({"file": POSITION_INPUT["file"]}, ["file"]),
        "outputSchema": _out({"path": _STR, "symbols": {"type": "array", "items": _SYMBOL}}, ["symbols"]),
    },
    {
        "name": "workspace_symbols",
        "description": "Symbols whose names match a query anywhere in the workspace, as path:line.",
        "inputSchema": _obj({"query": {"type": "string", "description": "a name or part of one"}}, ["query"]),
        "outputSchema": _out({"query": _STR, "symbols": {"type": "array", "items": _SYMBOL}}, ["symbols"]),
    },
    {
        "name": "diagnostics",
        "description": "The language server's current errors and warnings for one file, with 1-based positions.",
        "inputSchema": _obj({"file": POSITION_INPUT["file"]}, ["file"]),
        "outputSchema": _out({"path": _STR, "diagnostics": {"type": "array", "items": _DIAGNOSTIC}}, ["diagnostics"]),
    },
]
