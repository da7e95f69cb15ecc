"""A client on a stream without a socket (stream_transport.py): answered in order, cut off when it stops reading."""

from __future__ import annotations

import re

import anyio
import pytest
from anyio.abc import ByteStream

from lensmux.daemon.mux.clients.client_session import ClientSession
from lensmux.daemon.wire import envelope as ev
from lensmux.daemon.wire.envelope import Envelope
from lensmux.daemon.wire.framing import FrameLimits, frame

pytestmark = pytest.mark.anyio


class _Pipe(ByteStream):
    """A byte stream with no socket: what the client sends the daemon, and what the daemon wrote back."""

    def __init__(self, written_buffer: int) -> None:
        self.client_send, self._incoming = anyio.create_memory_object_stream[bytes](100)
        self._outgoing, self.client_receive = anyio.create_memory_object_stream[bytes](written_buffer)

    async def receive(self, max_bytes: int = 65536) -> bytes:
        return await self._incoming.receive()

    async def send(self, item: bytes) -> None:
        await self._outgoing.send(item)

    async def send_eof(self) -> None:
        await self._outgoing.aclose()

    async def aclose(self) -> None:
        await self._incoming.aclose()
        await self._outgoing.aclose()


async def _bodies(pipe: _Pipe, count: int) -> list[bytes]:
    """The first `count` messages the daemon wrote, unframed."""
    written = b""
    while len(bodies := _unframed(written)) < count:
        written += await pipe.client_receive.receive()
    return bodies


def _unframed(data: bytes) -> list[bytes]:
    bodies = []
    while (match := re.match(rb"Content-Length: (\d+)\r\n\r\n", data)) and len(data) >= match.end() + int(match[1]):
        bodies.append(data[match.end() : match.end() + int(match[1])])
        data = data[match.end() + int(match[1]) :]
    return bodies


def _request(rid: int) -> bytes:
    return frame(ev.request(rid, "textDocument/hover", ev.encode_value({"n": rid})))


async def test_every_request_is_answered_in_order_and_the_peer_leaving_ends_the_session() -> None:
    pipe = _Pipe(written_buffer=100)
    session = ClientSession(pipe, "pyright", limits=FrameLimits(), queue_size=10)
    assert session._socket is None  # the stream path, not the protocol path

    async def handler(client: ClientSession, env: Envelope) -> None:
        client.reply(env.rid, {"answer": ev.decode_value(env.params)["n"]})

    async with anyio.create_task_group() as tg:
        tg.start_soon(session.serve, handler)
        for rid in (1, 2, 3):
            await pipe.client_send.send(_request(rid))
        answers = [ev.decode_value(ev.decode(body).result) for body in await _bodies(pipe, 3)]
        await pipe.client_send.aclose()

    assert answers == [{"answer": 1}, {"answer": 2}, {"answer": 3}]
    assert session.close_reason == "connection closed"
    assert session.requests == 3


async def test_a_client_that_does_not_read_is_disconnected_when_its_queue_is_full() -> None:
    # Nothing takes what the daemon writes: the writer waits on its first message.
    pipe = _Pipe(written_buffer=0)
    session = ClientSession(pipe, "pyright", limits=FrameLimits(), queue_size=2)

    async def handler(client: ClientSession, env: Envelope) -> None:
        for n in range(5):
            client.reply(env.rid, n)

    async with anyio.create_task_group() as tg:
        tg.start_soon(session.serve, handler)
        await pipe.client_send.send(_request(1))

    assert session.close_reason == "send queue full (2 messages)"
    assert session.dropped_messages == 1
