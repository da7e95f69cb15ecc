"""An MCP session with `lensmux mcp` through the SDK's own stdio client."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from mcp import Client
from mcp.client.stdio import StdioServerParameters

from support.daemon_proc import LENSMUX, DaemonProc

NINE = {
    "search_code", "find_definition", "find_references", "hover", "call_hierarchy", "rename_preview",
    "document_symbols", "workspace_symbols", "diagnostics",
}  # fmt: skip


@asynccontextmanager
async def mcp_client(daemon: DaemonProc, root: Path) -> AsyncIterator[Client]:
    """`lensmux mcp` over stdio with the SDK's minimal default environment, attached to `daemon`."""
    params = StdioServerParameters(
        command=LENSMUX,
        args=["mcp", "--runtime-dir", str(daemon.runtime_dir), "--no-autostart", "--root", str(root)],
        cwd=str(root),
    )
    async with Client(params, read_timeout_seconds=120) as client:
        await client.list_tools()
        yield client


async def call(client: Client, tool: str, **arguments: Any) -> tuple[str, dict[str, Any] | None, bool]:
    """(text, structuredContent, isError) of one tool call."""
    result = await client.call_tool(tool, arguments)
    text = "\n".join(getattr(c, "text", "") for c in result.content)
    return text, result.structured_content, bool(result.is_error)


async def ok(client: Client, tool: str, **arguments: Any) -> tuple[str, dict[str, Any]]:
    """A call that must succeed."""
    text, structured, is_error = await call(client, tool, **arguments)
    assert not is_error, f"{tool}({arguments}) failed: {text}"
    assert structured is not None
    return text, structured
