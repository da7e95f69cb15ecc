"""Logging set-up for the journal or a terminal, and forwarding of server stderr.

Under systemd, stderr is a stream to journald (JOURNAL_STREAM names its
device and inode). journald adds its own timestamps and reads a leading `<N>`
as the syslog priority, so lines get the prefix and no time. Anywhere else
lines carry a timestamp and the level name.

Language servers write freely to stderr. A child blocks when its stderr pipe
is full, so `pump_stderr_task` reads the pipe without ever waiting on the log
handler: lines go through a bounded queue and are dropped (and counted) when
the handler lags, rather than stalling the server.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Mapping
from typing import IO

import anyio
from anyio.abc import ByteReceiveStream, TaskStatus
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from lensmux.daemon.service.errors import InvalidLogLevel

logger = logging.getLogger(__name__)

LEVELS = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "warning": logging.WARNING,
    "error": logging.ERROR,
    "critical": logging.CRITICAL,
}
SERVER_LOGGER_PREFIX = "lensmux.server."
PLAIN_FORMAT = "%(asctime)s %(levelname)-8s %(name)s: %(message)s"
JOURNAL_FORMAT = "%(name)s: %(message)s"
TRUNCATION_MARK = " …[truncated]"
_EMIT_BATCH = 256


def syslog_priority(levelno: int) -> int:
    """The syslog priority journald should record for a logging level number."""
    if levelno >= logging.CRITICAL:
        return 2
    if levelno >= logging.ERROR:
        return 3
    if levelno >= logging.WARNING:
        return 4
    if levelno >= logging.INFO:
        return 6
    return 7


def stream_is_journal(stream: IO[str], environ: Mapping[str, str] | None = None) -> bool:
    """True when stream is the journald stream systemd connected (JOURNAL_STREAM matches)."""
    env = os.environ if environ is None else environ
    device, sep, inode = env.get("JOURNAL_STREAM", "").partition(":")
    if not sep:
        return False
    try:
        st = os.fstat(stream.fileno())
        return (st.st_dev, st.st_ino) == (int(device), int(inode))
    except (OSError, ValueError, AttributeError):
        # No fd (StringIO, pytest capture) or a malformed variable: not the journal.
        return False


class JournalFormatter(logging.Formatter):
    """Prefixes every line with `<N>` so journald files tracebacks at the record's priority."""

    def __init__(self) -> None:
        super().__init__(JOURNAL_FORMAT)

    def format(self, record: logging.LogRecord) -> str:
        """Format the record and prefix each of its lines with its syslog priority."""
        prefix = f"<{syslog_priority(record.levelno)}>"
        return "\n".join(prefix + line for line in super().format(record).splitlines())


class _LensmuxHandler(logging.StreamHandler[IO[str]]):
    """Marks the handler configure_logging installed, so a reconfigure replaces it."""


def configure_logging(level: str, stream: IO[str] | None = None) -> logging.Handler:
    """Send all logging to stream (default: sys.stderr) in journal or plain format."""
    levelno = LEVELS.get(level.strip().lower())
    if levelno is None:
        raise InvalidLogLevel(f"unknown log level {level!r}; use one of {', '.join(LEVELS)}")
    target = sys.stderr if stream is None else stream
    handler = _LensmuxHandler(target)
    journal = stream_is_journal(target)
    handler.setFormatter(JournalFormatter() if journal else logging.Formatter(PLAIN_FORMAT))
    root = logging.getLogger()
    for old in [h for h in root.handlers if isinstance(h, _LensmuxHandler)]:
        root.removeHandler(old)
        old.close()
    root.addHandler(handler)
    root.setLevel(levelno)
    return handler


async def pump_stderr_task(
    stream: ByteReceiveStream,
    name: str,
    *,
    max_line: int = 4096,
    max_pending: int = 1024,
    task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
) -> None:
    """Log a child's stderr lines as `lensmux.server.<name>` until EOF, never stalling the child."""
    log = logging.getLogger(SERVER_LOGGER_PREFIX + name)
    send, receive = anyio.create_memory_object_stream[tuple[int, str | None]](max_pending)
    async with anyio.create_task_group() as tg:
        tg.start_soon(_emit_lines_task, receive, log)
        task_status.started()
        async with send:
            dropped = await _read_lines(stream, send, name, max_line)
            if dropped:
                # The child is done, so waiting for the consumer costs it nothing.
                await send.send((dropped, None))


async def _read_lines(
    stream: ByteReceiveStream,
    send: MemoryObjectSendStream[tuple[int, str | None]],
    name: str,
    max_line: int,
) -> int:
    """Split the byte stream into capped lines and queue them; returns lines still unreported."""
    buf = bytearray()
    discarding = False  # inside an over-long line whose head was already queued
    dropped = 0

    def queue(raw: bytes | bytearray, truncated: bool) -> None:
        nonlocal dropped
        text = raw.decode("utf-8", "replace").rstrip("\r")
        if truncated:
            text += TRUNCATION_MARK
        try:
            send.send_nowait((dropped, text))
        except anyio.WouldBlock:
            dropped += 1
        else:
            dropped = 0

    try:
        async for chunk in stream:
            buf += chunk
            start = 0
            while (newline := buf.find(b"\n", start)) != -1:
                line = buf[start:newline]
                start = newline + 1
                if discarding:
                    discarding = False
                else:
                    queue(line[:max_line], truncated=len(line) > max_line)
            del buf[:start]
            if len(buf) > max_line:
                if not discarding:
                    queue(buf[:max_line], truncated=True)
                discarding = True
                buf.clear()
    except (anyio.ClosedResourceError, anyio.BrokenResourceError) as exc:
        logger.debug("stderr pipe of %s closed: %r", name, exc)
    if buf and not discarding:
        queue(buf[:max_line], truncated=len(buf) > max_line)
    return dropped


async def _emit_lines_task(receive: MemoryObjectReceiveStream[tuple[int, str | None]], log: logging.Logger) -> None:
    async with receive:
        async for item in receive:
            batch = [item]
            while len(batch) < _EMIT_BATCH:
                try:
                    batch.append(receive.receive_nowait())
                except (anyio.WouldBlock, anyio.EndOfStream):
                    break
            # A handler stuck on a full journal pipe must block this thread,
            # not the event loop that keeps draining every server's stderr.
            await anyio.to_thread.run_sync(_emit_batch, log, batch)


def _emit_batch(log: logging.Logger, batch: list[tuple[int, str | None]]) -> None:
    for dropped, text in batch:
        if dropped:
            log.warning("%d stderr line(s) dropped: logging could not keep up", dropped)
        if text is not None:
            log.info("%s", text)
