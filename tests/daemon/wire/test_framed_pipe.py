"""A server's output read under the framed protocol: frames taken in the read callback keep their order."""

from __future__ import annotations

import os

import anyio
import pytest

from lensmux.daemon.wire.framing import FrameLimits, frame
from lensmux.daemon.wire.socket_transport import open_framed_pipe

pytestmark = pytest.mark.anyio


async def _settle() -> None:
    # The read callback runs on a later loop turn than the write that feeds it.
    for _ in range(20):
        await anyio.sleep(0.005)


async def test_frames_taken_in_the_callback_never_overtake_queued_ones() -> None:
    read_end, write_end = os.pipe()
    proto = await open_framed_pipe(read_end, FrameLimits())
    seen: list[bytes] = []

    def take(body: bytes) -> bool:
        if body.startswith(b"take"):
            seen.append(body)
            return True
        return False

    proto.on_frame = take
    try:
        # Nobody reads yet: everything waits in the queue, in order, even what `take` would take.
        os.write(write_end, frame(b"first") + frame(b"take-1"))
        await _settle()
        assert seen == []
        assert await proto.read_batch() == [b"first", b"take-1"]

        async with anyio.create_task_group() as tg:
            batches: list[list[bytes] | None] = []

            async def reader() -> None:
                batches.append(await proto.read_batch())

            tg.start_soon(reader)
            await _settle()
            # The reader waits with nothing queued: a frame `take` wants is taken at once and
            # wakes nobody; the next one it refuses goes to the reader, and what follows it waits too.
            os.write(write_end, frame(b"take-2"))
            await _settle()
            assert seen == [b"take-2"] and batches == []
            os.write(write_end, frame(b"second") + frame(b"take-3"))
        assert batches == [[b"second", b"take-3"]]
        assert seen == [b"take-2"]
        os.close(write_end)
        write_end = -1
        assert await proto.read_batch() is None
    finally:
        if write_end >= 0:
            os.close(write_end)
        proto.close()


async def test_an_error_in_the_callback_is_raised_by_the_reader() -> None:
    read_end, write_end = os.pipe()
    proto = await open_framed_pipe(read_end, FrameLimits())

    class RoutingBug(Exception):
        pass

    def take(body: bytes) -> bool:
        raise RoutingBug(body.decode())

    proto.on_frame = take
    try:
        async with anyio.create_task_group() as tg:
            errors: list[BaseException] = []

            async def reader() -> None:
                try:
                    await proto.read_batch()
                except RoutingBug as exc:
                    errors.append(exc)

            tg.start_soon(reader)
            await _settle()
            os.write(write_end, frame(b"boom"))
        assert [str(e) for e in errors] == ["boom"]
    finally:
        os.close(write_end)
        proto.close()
