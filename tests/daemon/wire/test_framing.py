"""Framing round-trips: split reads, many messages per read, non-ASCII, caps."""

from __future__ import annotations

import anyio
import pytest
from anyio.streams.memory import MemoryObjectReceiveStream

from lensmux.daemon.wire.framing import (
    BodyTooLarge,
    FrameLimits,
    FrameReader,
    HeaderTooLarge,
    MalformedHeader,
    TruncatedMessage,
    frame,
)

pytestmark = pytest.mark.anyio


class _ChunkStream(anyio.abc.ByteReceiveStream):
    """Delivers bytes in the chunks given, then end of stream."""

    def __init__(self, receive: MemoryObjectReceiveStream[bytes]) -> None:
        self._receive = receive

    async def receive(self, max_bytes: int = 65536) -> bytes:
        try:
            return await self._receive.receive()
        except anyio.EndOfStream:
            raise anyio.EndOfStream from None

    async def aclose(self) -> None:
        await self._receive.aclose()


async def _read_all(chunks: list[bytes], limits: FrameLimits | None = None) -> list[bytes]:
    send, receive = anyio.create_memory_object_stream[bytes](len(chunks) + 1)
    for chunk in chunks:
        send.send_nowait(chunk)
    send.close()
    reader = FrameReader(_ChunkStream(receive), limits)
    out = []
    while (body := await reader.read()) is not None:
        out.append(body)
    return out


BODIES = [b'{"jsonrpc":"2.0","method":"a"}', '{"text":"héllo wörld ✓ 𝄞"}'.encode(), b"{}"]


async def test_one_read_with_several_messages() -> None:
    assert await _read_all([b"".join(frame(b) for b in BODIES)]) == BODIES


async def test_byte_by_byte_reads() -> None:
    data = b"".join(frame(b) for b in BODIES)
    assert await _read_all([data[i : i + 1] for i in range(len(data))]) == BODIES


async def test_content_length_counts_bytes_of_non_ascii_bodies() -> None:
    body = BODIES[1]
    assert frame(body).startswith(b"Content-Length: %d\r\n" % len(body))
    assert len(body) > len(body.decode())


async def test_header_names_are_case_insensitive_and_content_type_allowed() -> None:
    msg = b"content-LENGTH: 2\r\nContent-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n{}"
    assert await _read_all([msg]) == [b"{}"]


@pytest.mark.parametrize(
    ("data", "error"),
    [
        (b"Content-Length: 2\r\nContent-Length: 2\r\n\r\n{}", MalformedHeader),
        (b"Content-Type: x\r\n\r\n{}", MalformedHeader),
        (b"Content-Length: -5\r\n\r\n{}", MalformedHeader),
        (b"Content-Length: abc\r\n\r\n{}", MalformedHeader),
        (b"garbage line\r\n\r\n{}", MalformedHeader),
        (b"Content-Length: 99999999999\r\n\r\n", BodyTooLarge),
        (b"Content-Length: 10\r\n\r\n{}", TruncatedMessage),
        (b"X" * 10000, HeaderTooLarge),
        (b"Content-Length: 2\r\nContent-Type: x; charset=latin-1\r\n\r\n{}", MalformedHeader),
    ],
)
async def test_unrecoverable_framing_is_an_error(data: bytes, error: type[Exception]) -> None:
    with pytest.raises(error):
        await _read_all([data])


async def test_body_cap_is_configurable() -> None:
    with pytest.raises(BodyTooLarge):
        await _read_all([frame(b"x" * 100)], FrameLimits(max_body=99))
    assert await _read_all([frame(b"x" * 100)], FrameLimits(max_body=100)) == [b"x" * 100]


async def test_clean_end_between_messages_is_not_an_error() -> None:
    assert await _read_all([frame(b"{}"), b""]) == [b"{}"]
