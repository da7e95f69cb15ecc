"""Async LSP test client over anyio byte streams; shares no code with lensmux.

`LspClient` speaks LSP as an editor would, over a spawned process's stdio or a Unix
socket; the JSON-RPC core and the exception tree live in support.lsp_connection.
"""

from __future__ import annotations

import logging
import os
import signal
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from subprocess import PIPE
from typing import Any

import anyio
from anyio.abc import ByteReceiveStream, ByteSendStream, Process

from support.lsp_connection import (
    STREAM_GONE,
    LspConnection,
    LspConnectionClosed,
    LspTimeout,
    PendingRequest,
    RequestId,
)
from support.lsp_defaults import (
    LspResponseError,
    capabilities_declaring,
    default_client_capabilities,
    default_server_request_handlers,
    initialize_params,
    path_uri,
    uri_path,
)
from support.lsp_framing import LspClientError, LspFramingError, LspProtocolError

__all__ = [
    "LspClient",
    "LspClientError",
    "LspConnectionClosed",
    "LspFramingError",
    "LspProtocolError",
    "LspResponseError",
    "LspTimeout",
    "PendingRequest",
    "RequestId",
    "capabilities_declaring",
    "default_client_capabilities",
    "path_uri",
    "uri_path",
]

logger = logging.getLogger(__name__)


class LspClient(LspConnection):
    """One LSP client connection, as an editor would hold it, for driving servers in tests."""

    def __init__(
        self,
        send_stream: ByteSendStream,
        receive_stream: ByteReceiveStream,
        *,
        name: str,
        process: Process | None = None,
    ) -> None:
        super().__init__(send_stream, receive_stream, name=name)
        self.process = process
        self.stderr_lines: list[str] = []
        self.initialize_result: dict[str, Any] | None = None
        self.workspace_folders: list[dict[str, str]] | None = None
        # Every message this client wrote, in order (conformance transcripts read it).
        self.sent_messages: list[dict[str, Any]] = []
        self._handlers.update(default_server_request_handlers(lambda: self.workspace_folders))
        self._stderr_done = anyio.Event()

    # -- connecting -------------------------------------------------------------------

    @classmethod
    @asynccontextmanager
    async def over_streams(
        cls, send_stream: ByteSendStream, receive_stream: ByteReceiveStream, *, name: str = "client"
    ) -> AsyncIterator[LspClient]:
        """Talk over an already-connected pair of byte streams; both are closed on exit."""
        client = cls(send_stream, receive_stream, name=name)

        async def stop() -> None:
            await client._close_send_stream()
            await client._receive.aclose()

        async with client._serving(stop):
            yield client

    @classmethod
    @asynccontextmanager
    async def over_unix(cls, path: Path, *, name: str = "client") -> AsyncIterator[LspClient]:
        """Connect to a Unix socket (such as lensmux's) and talk over it."""
        stream = await anyio.connect_unix(path)
        async with cls.over_streams(stream, stream, name=name) as client:
            yield client

    @classmethod
    @asynccontextmanager
    async def over_process(
        cls,
        argv: Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        cwd: Path | None = None,
        name: str = "client",
        exit_grace: float = 5.0,
    ) -> AsyncIterator[LspClient]:
        """Spawn argv and talk over its stdin/stdout; `env` is added to the inherited one.

        On exit stdin is closed, the process gets `exit_grace` seconds to end, then
        its whole process group is killed so no test leaks processes.
        """
        process = await anyio.open_process(
            list(argv),
            stdin=PIPE,
            stdout=PIPE,
            stderr=PIPE,
            cwd=cwd,
            env={**os.environ, **env} if env is not None else None,
            start_new_session=True,
        )
        if process.stdin is None or process.stdout is None or process.stderr is None:
            raise LspClientError("process was started without pipes")
        client = cls(process.stdin, process.stdout, name=name, process=process)
        stderr = process.stderr

        async def stop() -> None:
            await client._stop_process(process, exit_grace)

        async with client._serving(stop, lambda: client._stderr_task(stderr)):
            yield client

    async def send_message(self, message: Mapping[str, Any]) -> None:
        """Frame and send one JSON-RPC message, keeping a copy in `sent_messages`."""
        self.sent_messages.append(dict(message))
        await super().send_message(message)

    @property
    def pid(self) -> int | None:
        """Process id of the spawned peer (None over a socket)."""
        return self.process.pid if self.process is not None else None

    @property
    def returncode(self) -> int | None:
        """Exit status of the spawned peer once it has ended."""
        return self.process.returncode if self.process is not None else None

    # -- LSP conveniences -------------------------------------------------------------

    async def initialize(
        self,
        root: Path,
        *,
        capabilities: dict[str, Any] | None = None,
        workspace_folders: bool = True,
        process_id: int | None = None,
        initialization_options: Any = None,
        locale: str | None = None,
        timeout: float = 60,
    ) -> dict[str, Any]:
        """Send `initialize` for root then `initialized`; returns the InitializeResult."""
        params = initialize_params(
            root,
            client_name=self.name,
            capabilities=capabilities,
            workspace_folders=workspace_folders,
            process_id=process_id,
            initialization_options=initialization_options,
            locale=locale,
        )
        self.workspace_folders = params["workspaceFolders"]
        result = await self.request("initialize", params, timeout=timeout)
        if not isinstance(result, dict) or not isinstance(result.get("capabilities"), dict):
            raise LspProtocolError(f"{self.name}: initialize answered {result!r}")
        self.initialize_result = result
        await self.notify("initialized", {})
        return result

    async def open(self, path: Path, language_id: str, text: str | None = None, version: int = 1) -> str:
        """Send didOpen (text read from disk unless given); returns the document URI."""
        if text is None:
            text = await anyio.Path(path).read_text(encoding="utf-8")
        uri = path_uri(path)
        await self.notify(
            "textDocument/didOpen",
            {
                "textDocument": {
                    "uri": uri,
                    "languageId": language_id,
                    "version": version,
                    "text": text,
                }
            },
        )
        return uri

    async def change(self, uri: str, version: int, changes: Sequence[Mapping[str, Any]]) -> None:
        """Send didChange with the given content changes."""
        await self.notify(
            "textDocument/didChange",
            {"textDocument": {"uri": uri, "version": version}, "contentChanges": list(changes)},
        )

    async def change_full(self, uri: str, text: str, version: int) -> None:
        """Send didChange replacing the whole text."""
        await self.change(uri, version, [{"text": text}])

    async def change_incremental(self, uri: str, version: int, range_: Mapping[str, Any], text: str) -> None:
        """Send didChange replacing `range_` (an LSP Range) by text."""
        await self.change(uri, version, [{"range": dict(range_), "text": text}])

    async def close(self, uri: str) -> None:
        """Send didClose."""
        await self.notify("textDocument/didClose", {"textDocument": {"uri": uri}})

    async def shutdown_and_exit(self, *, timeout: float = 60) -> None:
        """Send `shutdown`, wait for its answer, then send `exit`."""
        await self.request("shutdown", timeout=timeout)
        await self.notify("exit")

    # -- process teardown --------------------------------------------------

    async def _stderr_task(self, stream: ByteReceiveStream) -> None:
        partial = b""
        try:
            async for chunk in stream:
                partial += chunk
                *lines, partial = partial.split(b"\n")
                for line in lines:
                    self._add_stderr_line(line)
        except STREAM_GONE as exc:
            logger.debug("%s: stderr ended: %r", self.name, exc)
        finally:
            if partial:
                self._add_stderr_line(partial)
            self._stderr_done.set()

    def _add_stderr_line(self, line: bytes) -> None:
        text = line.decode("utf-8", errors="replace").rstrip("\r")
        logger.debug("%s stderr: %s", self.name, text)
        self.stderr_lines.append(text)

    async def _stop_process(self, process: Process, grace: float) -> None:
        await self._close_send_stream()
        with anyio.move_on_after(grace):
            await process.wait()
        if process.returncode is None:
            logger.warning(
                "%s: pid %d still running %s s after stdin closed; killing",
                self.name,
                process.pid,
                grace,
            )
        # Kill the group even after a clean exit: a child the peer left behind would
        # hold our pipes open and outlive the test.
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        else:
            if process.returncode is not None:
                logger.warning("%s: pid %d left processes behind", self.name, process.pid)
        await process.wait()
        # Let the readers take in what the process wrote before it ended.
        with anyio.move_on_after(2):
            await self.closed.wait()
            await self._stderr_done.wait()
        await process.aclose()


@asynccontextmanager
async def initialized_clients(argv: Sequence[str], root: Path, *names: str) -> AsyncIterator[list[LspClient]]:
    """One client per name, each over its own `argv` process (a `lensmux client` bridge), initialized for `root`.

    What several editors opening the same workspace do; the processes all start before the first handshake.
    """
    async with AsyncExitStack() as stack:
        clients = [await stack.enter_async_context(LspClient.over_process(argv, name=name)) for name in names]
        for client in clients:
            await client.initialize(root)
        yield clients


async def concurrent_echoes(clients: Mapping[str, LspClient], count: int) -> dict[str, Any]:
    """Each client sends `count` `fake/echo` requests tagged with its key, all clients at once; answers by tag+i."""
    results: dict[str, Any] = {}

    async def ask(client: LspClient, tag: str) -> None:
        for i in range(count):
            results[f"{tag}{i}"] = await client.request("fake/echo", {"tag": tag, "i": i})

    async with anyio.create_task_group() as tg:
        for tag, client in clients.items():
            tg.start_soon(ask, client, tag)
    return results
