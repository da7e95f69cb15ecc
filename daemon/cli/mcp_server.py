"""`lensmux mcp`: a stdio MCP server whose nine tools are answered by the user's one daemon.

A thin forwarder built on the official MCP Python SDK: it lists the tools the
daemon describes (`lensmux/assist/tools`) and forwards each call to
`lensmux/assist/call` over the control socket, so answers come from the shared
instances editors use. Only `search_code` does something here first: on a
root with no index it starts indexing and reports MCP progress until done or
until a bound below the clients' usual 60 s request timeout.
SDK types stay in this module; the daemon side knows nothing of MCP.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import Any

import anyio
import anyio.from_thread
import anyio.to_thread
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

from lensmux.daemon.cli.connect.autostart import ensure_daemon
from lensmux.daemon.cli.connect.control_client import ControlClient, ControlClientError, DaemonNotRunning, RemoteError
from lensmux.daemon.cli.connect.index_wait import describe, ensure_indexed

log = logging.getLogger("lensmux.mcp")

# search_code waits this long for a first index; then it answers from what is indexed (the
# answer says its coverage), or, with nothing indexed yet, with the run's progress.
INDEX_WAIT = 45.0
# A tool call's own answer; the daemon bounds every tool at 50 s.
CALL_TIMEOUT = 58.0


class McpForwarder:
    """The MCP handlers: tool listing and calls, forwarded to the daemon."""

    def __init__(self, runtime_dir: Path, root: Path, autostart: bool, config: Path | None) -> None:
        self.runtime_dir = runtime_dir
        self.root = root
        self.autostart = autostart
        self.config = config

    def _call_blocking(self, method: str, params: Any, timeout: float) -> Any:
        try:
            with ControlClient(self.runtime_dir, timeout=timeout) as ctl:
                return ctl.call(method, params)
        except DaemonNotRunning:
            if not self.autostart:
                raise
        # The daemon went away (stopped, or never started): start it once and ask again.
        ensure_daemon(self.runtime_dir, True, self.config)
        with ControlClient(self.runtime_dir, timeout=timeout) as ctl:
            return ctl.call(method, params)

    async def call(self, method: str, params: Any, timeout: float = CALL_TIMEOUT) -> Any:
        """A control request off the event loop."""
        return await anyio.to_thread.run_sync(self._call_blocking, method, params, timeout)

    async def list_tools(self, ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        """tools/list: the daemon's tool descriptions."""
        described = await self.call("lensmux/assist/tools", None, 30)
        tools = [
            types.Tool(
                name=t["name"],
                description=t["description"],
                input_schema=t["inputSchema"],
                output_schema=t["outputSchema"],
            )
            for t in described["tools"]
        ]
        return types.ListToolsResult(tools=tools)

    async def call_tool(self, ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        """tools/call: forwarded; daemon trouble becomes an isError result, never a dead session."""
        arguments = dict(params.arguments or {})
        try:
            if params.name == "search_code":
                pending = await self._index_first(ctx)
                if pending is not None:
                    return _result(pending, None, True)
            answer = await self.call(
                "lensmux/assist/call", {"tool": params.name, "root": str(self.root), "arguments": arguments}
            )
        except RemoteError as exc:
            return _result(f"{exc}", None, True)
        except (ControlClientError, OSError) as exc:
            return _result(f"the lensmux daemon is not reachable ({exc}); try again in a few seconds", None, True)
        return _result(answer["text"], answer.get("structured"), bool(answer.get("is_error")))

    async def _index_first(self, ctx: Any) -> str | None:
        """Index the root if it has no index yet, with progress; an error text if nothing is indexed in time."""

        def report(status: dict[str, Any]) -> None:
            total = float(status.get("files_total") or 0) or None
            done = float(status.get("files_done") or 0)
            anyio.from_thread.run(_progress, ctx, done, total, describe(status))

        def run() -> tuple[bool, dict[str, Any]]:
            try:
                return ensure_indexed(self.runtime_dir, self.root, report, INDEX_WAIT)
            except DaemonNotRunning:
                ensure_daemon(self.runtime_dir, self.autostart, self.config)
                return ensure_indexed(self.runtime_dir, self.root, report, INDEX_WAIT)

        done, status = await anyio.to_thread.run_sync(run)
        if done:
            return None
        if status.get("error"):
            return f"indexing {self.root} failed: {status['error']}; see `lensmux status`"
        return (
            f"indexing {self.root} is under way ({status.get('files_done', 0)}/{status.get('files_total', 0)} files "
            "so far); call search_code again in a minute. find_definition, find_references and "
            "workspace_symbols work meanwhile."
        )


async def _progress(ctx: Any, done: float, total: float | None, message: str) -> None:
    try:
        await ctx.session.report_progress(done, total, message)
    except Exception as exc:  # a client that cannot take progress must not fail the call
        log.debug("progress not sent: %r", exc)


def _result(text: str, structured: dict[str, Any] | None, is_error: bool) -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)],
        structured_content=structured if not is_error else None,
        is_error=is_error,
    )


def serve_mcp(runtime_dir: Path, root: Path, autostart: bool, config: Path | None) -> int:
    """Run the MCP server on stdio until the client closes it."""
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format="lensmux mcp: %(message)s")
    ensure_daemon(runtime_dir, autostart, config)
    forwarder = McpForwarder(runtime_dir, root, autostart, config)
    server: Server[Any] = Server(
        "lensmux",
        version="0.1.0",
        instructions=f"Code navigation and search over {root}, answered by language servers shared with the "
        "user's editors. Every tool accepts a symbol name where a position is asked.",
        on_list_tools=forwarder.list_tools,
        on_call_tool=forwarder.call_tool,
    )

    async def main() -> None:
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())

    anyio.run(main)
    return 0
