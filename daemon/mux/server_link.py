"""One running server process seen as framed messages, plus its stderr in the log."""

from __future__ import annotations

import logging
import time
from pathlib import Path

import anyio
from anyio.abc import Process

from lensmux.daemon.mux import process as proc
from lensmux.daemon.service.logsetup import pump_stderr_task
from lensmux.daemon.wire.framing import FrameLimits, FrameReader, FrameWriter

log = logging.getLogger(__name__)


class ServerLink:
    """Framed stdio of a live server process."""

    def __init__(self, process: Process, name: str, limits: FrameLimits) -> None:
        assert process.stdin and process.stdout
        self.process = process
        self.name = name
        self.started = time.time()
        self.reader = FrameReader(process.stdout, limits)
        self.writer = FrameWriter(process.stdin)

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
        """Log the server's stderr under its name, bounded, never blocking it."""
        if self.process.stderr is not None:
            await pump_stderr_task(self.process.stderr, self.name)
