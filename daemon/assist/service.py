"""The control methods `lensmux/assist/tools` and `lensmux/assist/call`: the daemon side of `lensmux mcp`.

A call names a tool, a workspace root and the tool's arguments; the answer is
{text, structured, is_error}. Bad input and unavailable servers are answers
with is_error set, never JSON-RPC errors: the caller passes them to the model.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio

from lensmux.daemon.assist.errors import ToolError
from lensmux.daemon.assist.lsp.workspace import Workspace
from lensmux.daemon.assist.schemas import TOOLS
from lensmux.daemon.assist.tools import edits, listing, navigation
from lensmux.daemon.assist.tools.searching import HybridSearch, search_code
from lensmux.daemon.control import ControlError
from lensmux.daemon.mux.internal_client import InternalClient
from lensmux.daemon.wire.envelope import ErrorCode

log = logging.getLogger(__name__)

# Every tool answers within this (MCP clients give a request 60 s).
TOOL_DEADLINE = 50.0
Tool = Callable[[Workspace, dict[str, Any]], Awaitable[tuple[str, dict[str, Any]]]]


class AssistService:
    """Runs the tools over the daemon's shared instances."""

    def __init__(self, internal: InternalClient, hybrid: HybridSearch) -> None:
        self._internal = internal
        # Tool calls running now: the call-graph learner waits for none.
        self.active = 0
        self._tools: dict[str, Tool] = {
            "search_code": lambda ws, a: search_code(ws, a, hybrid),
            "find_definition": navigation.find_definition,
            "find_references": navigation.find_references,
            "hover": navigation.hover,
            "call_hierarchy": navigation.call_hierarchy,
            "rename_preview": edits.rename_preview,
            "document_symbols": listing.document_symbols,
            "workspace_symbols": listing.workspace_symbols,
            "diagnostics": listing.diagnostics,
        }

    async def list_tools(self, params: Any) -> Any:
        """The control method `lensmux/assist/tools`."""
        return {"tools": TOOLS}

    async def call(self, params: Any) -> Any:
        """The control method `lensmux/assist/call`: {tool, root, arguments} → {text, structured, is_error}."""
        if not isinstance(params, dict):
            raise ControlError(ErrorCode.INVALID_PARAMS, "params must be {tool, root, arguments}")
        name, root, args = params.get("tool"), params.get("root"), params.get("arguments") or {}
        tool = self._tools.get(name) if isinstance(name, str) else None
        if tool is None:
            raise ControlError(ErrorCode.INVALID_PARAMS, f"unknown tool {name!r}; known: {', '.join(self._tools)}")
        if not isinstance(root, str) or not Path(root).is_absolute() or not await anyio.Path(root).is_dir():
            raise ControlError(ErrorCode.INVALID_PARAMS, "root must be an absolute path of a directory")
        if not isinstance(args, dict):
            return _error("arguments must be an object")
        ws = Workspace(self._internal, Path(await anyio.Path(root).resolve()))
        answer = None
        self.active += 1
        try:
            with anyio.move_on_after(TOOL_DEADLINE):
                answer = await tool(ws, args)
        except ToolError as exc:
            log.info("assist %s: %s", name, exc)
            return _error(str(exc))
        except Exception as exc:
            log.exception("assist %s failed", name)
            return _error(f"internal error in {name}: {type(exc).__name__}: {exc}; the daemon log has details")
        finally:
            self.active -= 1
        if answer is None:
            return _error(f"{name} did not finish within {TOOL_DEADLINE:g}s; the server may be busy, try again")
        text, structured = answer
        structured["unsaved_files"] = sorted(ws.unsaved)
        return {"text": text + ws.note(), "structured": structured, "is_error": False}


def _error(message: str) -> dict[str, Any]:
    return {"text": message, "structured": None, "is_error": True}
