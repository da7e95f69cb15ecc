"""The control socket's connection lost under an answer the reading loop sends itself."""

from __future__ import annotations

import logging

import anyio
import pytest

from lensmux.daemon.control import ControlServer
from lensmux.daemon.wire.framing import FrameLimits

pytestmark = pytest.mark.anyio


class _GonePeer(anyio.abc.ByteStream):
    """A peer that sent one malformed message and left: every send to it fails."""

    def __init__(self, sent: bytes) -> None:
        self._pending = [sent]

    async def receive(self, max_bytes: int = 65536) -> bytes:
        if self._pending:
            return self._pending.pop()
        raise anyio.EndOfStream

    async def send(self, item: bytes) -> None:
        raise anyio.BrokenResourceError

    async def send_eof(self) -> None:
        pass

    async def aclose(self) -> None:
        pass


async def test_a_peer_gone_before_its_bad_message_is_answered_is_a_lost_connection(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """serve() reads inside a task group, so the answer's BrokenResourceError arrives as an
    ExceptionGroup: it must still end the connection quietly, not leave serve() (which the
    daemon logs as a failed connection task)."""
    body = b'{"jsonrpc": "2.0", "id": 1}'  # neither a request, a response nor a notification
    peer = _GonePeer(b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
    with caplog.at_level(logging.INFO, logger="lensmux.daemon.control"):
        await ControlServer(FrameLimits()).serve(peer)
    assert any("connection lost" in r.getMessage() for r in caplog.records), caplog.text
