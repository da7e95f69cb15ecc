"""One running server process seen as framed messages, plus its stderr in the log."""

from __future__ import annotations

import logging
import time
from pathlib import Path

import anyio
from anyio.abc import ByteReceiveStream, Process

from lensmux.daemon import process as proc
from lensmux.daemon.wire.framing import FrameLimits, FrameReader, FrameWriter

log = logging.getLogger(__name__)

_STDERR_LINE_CAP = 4096


class ServerLink:
    """Framed stdio of a live server process."""

    def __init__(self, process: Process, name: str, limits: FrameLimits) -> None:
        assert process.stdin and process.stdout
        self.process = process
        self.name = name
        self.started = time.time()
        self.reader = FrameReader(process.stdout, limits)
        self.writer = FrameWriter(process.stdin)
        self.stderr_tail: list[str] = []

    @classmethod
    async def start(cls, argv: list[str], env: dict[str, str], cwd: Path, name: str, limits: FrameLimits) -> ServerLink:
        """Spawn the server; raise SpawnFailed."""
        process = await proc.spawn(argv, env=env, cwd=cwd)
        log.info("%s: started pid %d: %s", name, process.pid, " ".join(argv))
        return cls(process, name, limits)

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
        return self.process.returncode

    async def stderr_task(self) -> None:
        """Log the server's stderr line by line, bounded, never blocking it."""
        stream: ByteReceiveStream | None = self.process.stderr
        if stream is None:
            return
        logger = logging.getLogger(f"lensmux.server.{self.name}")
        pending = b""
        try:
            async for chunk in stream:
                pending += chunk
                *lines, pending = pending.split(b"\n")
                if len(pending) > _STDERR_LINE_CAP:
                    lines.append(pending)
                    pending = b""
                for line in lines:
                    text = line[:_STDERR_LINE_CAP].decode("utf-8", "replace").rstrip()
                    if text:
                        self._remember(text)
                        logger.info("%s", text)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            return

    def _remember(self, text: str) -> None:
        self.stderr_tail.append(text)
        del self.stderr_tail[:-20]
