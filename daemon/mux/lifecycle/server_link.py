"""One running server process seen as framed messages, plus its stderr in the log.

Its output is read under an asyncio protocol (wire/socket_transport.py), like a
client socket; its input is written through anyio's pipe stream (FrameWriter).
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

import anyio
from anyio.abc import Process

from lensmux.daemon.mux.lifecycle import process as proc
from lensmux.daemon.service.logsetup import pump_stderr_task
from lensmux.daemon.wire.framing import FrameLimits, FrameWriter
from lensmux.daemon.wire.socket_transport import FramedProtocol, open_framed_pipe

log = logging.getLogger(__name__)


class ServerLink:
    """Framed stdio of a live server process."""

    def __init__(self, process: Process, name: str, reader: FramedProtocol) -> None:
        assert process.stdin
        self.process = process
        self.name = name
        self.started = time.time()
        self.reader = reader
        self.writer = FrameWriter(process.stdin)

    @classmethod
    async def start(cls, argv: list[str], env: dict[str, str], cwd: Path, name: str, limits: FrameLimits) -> ServerLink:
        """Spawn the server; raise SpawnFailed."""
        process, output = await proc.spawn(argv, env=env, cwd=cwd)
        log.info("%s: started pid %d: %s", name, process.pid, " ".join(argv))
        try:
            reader = await open_framed_pipe(output, limits)
        except BaseException:
            with anyio.CancelScope(shield=True):
                await proc.terminate(process, 0.5)
            raise
        return cls(process, name, reader)

    @property
    def pid(self) -> int:
        """The server's pid."""
        return self.process.pid

    async def send(self, body: bytes) -> None:
        """Write one message to the server."""
        await self.writer.send(body)

    async def stop(self, grace: float) -> int | None:
        """Close stdin, wait briefly, then terminate the process group."""
        with anyio.CancelScope(shield=True):
            try:
                await self.writer.aclose()
            except (OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
                pass
            if not await proc.wait_exit(self.process, min(grace, 1.0)):
                await proc.terminate(self.process, grace)
            # Output a child of the server may still hold open is not read any more.
            self.reader.close()
        return self.process.returncode

    async def stderr_task(self) -> None:
        """Log the server's stderr under its name, bounded, never blocking it."""
        if self.process.stderr is not None:
            await pump_stderr_task(self.process.stderr, self.name)
