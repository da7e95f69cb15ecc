"""The test client's framing and message handling, against a scripted peer socket."""

from __future__ import annotations

import json
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from anyio.abc import SocketStream
from anyio.streams.buffered import BufferedByteReceiveStream
from support.lsp_framing import LspFramingError, encode_message, read_message
from support.lspclient import (
    LspClient,
    LspConnectionClosed,
    LspResponseError,
    LspTimeout,
    path_uri,
    uri_path,
)

pytestmark = pytest.mark.anyio


async def read_all(chunks: list[bytes]) -> list[dict[str, Any]]:
    """Every message in the byte chunks, read until a clean end."""
    send, receive = anyio.create_memory_object_stream[bytes](len(chunks) + 1)
    async with send, receive:
        for chunk in chunks:
            await send.send(chunk)
        await send.aclose()
        stream = BufferedByteReceiveStream(receive)
        messages = []
        while (message := await read_message(stream)) is not None:
            messages.append(message)
        return messages


async def test_headers_are_case_insensitive_and_split_reads_reassemble() -> None:
    body = b'{"jsonrpc":"2.0","method":"a"}'
    wire = (
        b"content-type: application/vscode-jsonrpc; charset=utf-8\r\n"
        b"CONTENT-LENGTH: %d\r\n\r\n" % len(body) + body + encode_message({"n": 2})
    )
    messages = await read_all([wire[i : i + 1] for i in range(len(wire))])
    assert messages == [{"jsonrpc": "2.0", "method": "a"}, {"n": 2}]


async def test_content_length_counts_utf8_bytes() -> None:
    message = {"text": "größe ✓ 🐍"}
    wire = encode_message(message)
    header, body = wire.split(b"\r\n\r\n", 1)
    assert header == b"Content-Length: %d" % len(body)
    assert len(body) > len(json.dumps(message, ensure_ascii=False))
    assert await read_all([wire]) == [message]


@pytest.mark.parametrize(
    "wire",
    [
        pytest.param(b"Content-Type: x\r\n\r\n{}", id="missing-length"),
        pytest.param(b"Content-Length: 2\r\nContent-Length: 2\r\n\r\n{}", id="repeated-length"),
        pytest.param(b"Content-Length: two\r\n\r\n{}", id="bad-length"),
        pytest.param(b"Content-Length: 5\r\n\r\n{bad}", id="bad-json"),
        pytest.param(b"Content-Length: 2\r\n\r\n[]", id="not-an-object"),
        pytest.param(b"Content-Length: 10\r\n\r\n{}", id="truncated-body"),
        pytest.param(b"Content-Len", id="truncated-header"),
        pytest.param(b"garbage\r\n\r\n{}", id="no-colon"),
    ],
)
async def test_malformed_input_is_a_framing_error(wire: bytes) -> None:
    with pytest.raises(LspFramingError):
        await read_all([wire])


async def test_clean_end_between_messages_is_not_an_error() -> None:
    assert await read_all([]) == []
    assert await read_all([encode_message({"a": 1})]) == [{"a": 1}]


async def test_path_uri_round_trips_spaces_and_non_ascii(tmp_path: Path) -> None:
    path = tmp_path / "dir with space" / "ünï #1.py"
    uri = path_uri(path)
    assert uri.startswith("file:///")
    assert " " not in uri
    assert "#" not in uri
    assert uri_path(uri) == path


@asynccontextmanager
async def scripted_peer() -> AsyncIterator[tuple[LspClient, SocketStream, BufferedByteReceiveStream]]:
    """A client whose peer is the test itself, at the other end of a socket pair."""
    ours, theirs = socket.socketpair()
    client_stream = await SocketStream.from_socket(ours)
    peer = await SocketStream.from_socket(theirs)
    async with peer, LspClient.over_streams(client_stream, client_stream, name="t") as client:
        yield client, peer, BufferedByteReceiveStream(peer)


async def next_message(stream: BufferedByteReceiveStream) -> dict[str, Any]:
    with anyio.fail_after(10):
        message = await read_message(stream)
    assert message is not None
    return message


async def test_answers_resolve_their_requests_by_id_in_any_order() -> None:
    async with scripted_peer() as (client, peer, inbox):
        first = await client.start_request("x/first", {"k": 1})
        second = await client.start_request("x/second", request_id="str-id")
        sent = [await next_message(inbox), await next_message(inbox)]
        assert sent[0] == {"jsonrpc": "2.0", "id": first.id, "method": "x/first", "params": {"k": 1}}
        assert sent[1] == {"jsonrpc": "2.0", "id": "str-id", "method": "x/second"}
        await peer.send(
            encode_message(
                {"jsonrpc": "2.0", "id": "str-id", "error": {"code": -32800, "message": "gone", "data": [1]}}
            )
            + encode_message({"jsonrpc": "2.0", "id": first.id, "result": None})
        )
        assert await first.result(timeout=10) is None
        with pytest.raises(LspResponseError) as raised:
            await second.result(timeout=10)
        assert (raised.value.code, raised.value.message, raised.value.data) == (-32800, "gone", [1])
        assert client.protocol_errors == []


async def test_server_requests_get_default_custom_and_not_found_answers() -> None:
    async def custom(params: Any) -> Any:
        return {"echoed": params}

    async with scripted_peer() as (client, peer, inbox):
        client.on_server_request("custom/ask", custom)
        for request_id, method, params in [
            (1, "workspace/configuration", {"items": [{"section": "a"}, {"section": "b"}]}),
            ("two", "custom/ask", [1]),
            (3, "unknown/thing", None),
        ]:
            await peer.send(encode_message({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}))
        answers = {m["id"]: m for m in [await next_message(inbox) for _ in range(3)]}
        assert answers[1]["result"] == [None, None]
        assert answers["two"]["result"] == {"echoed": [1]}
        assert answers[3]["error"]["code"] == -32601
        assert [m for m, _ in client.server_requests] == [
            "workspace/configuration",
            "custom/ask",
            "unknown/thing",
        ]


async def test_wait_notification_sees_earlier_ones_and_honours_since() -> None:
    async with scripted_peer() as (client, peer, _inbox):
        for n in range(3):
            await peer.send(encode_message({"jsonrpc": "2.0", "method": "n/x", "params": {"n": n}}))
        assert await client.wait_notification("n/x", lambda p: p["n"] == 2, timeout=10) == {"n": 2}
        assert await client.wait_notification("n/x", timeout=10) == {"n": 0}
        assert await client.wait_notification("n/x", since=1, timeout=10) == {"n": 1}
        with pytest.raises(LspTimeout):
            await client.wait_notification("n/x", since=3, timeout=0.2)
        assert client.notifications_of("n/x") == [{"n": 0}, {"n": 1}, {"n": 2}]
        assert (await client.read_raw_message(timeout=10))["params"] == {"n": 0}


async def test_peer_closing_fails_pending_requests_and_waits() -> None:
    async with scripted_peer() as (client, peer, _inbox):
        pending = await client.start_request("x/never")
        await peer.aclose()
        with pytest.raises(LspConnectionClosed):
            await pending.result(timeout=10)
        with pytest.raises(LspConnectionClosed):
            await client.wait_notification("n/x", timeout=10)
        assert client.closed.is_set()
        assert client.close_reason is not None
        assert client.close_reason.startswith("peer closed the stream")


async def test_garbage_from_peer_is_recorded_and_ends_the_connection() -> None:
    async with scripted_peer() as (client, peer, _inbox):
        pending = await client.start_request("x/y")
        await peer.send(b"HTTP/1.1 200 OK\r\n\r\n")
        with pytest.raises(LspConnectionClosed, match="protocol violation"):
            await pending.result(timeout=10)
        assert client.protocol_errors


async def test_answer_to_an_unknown_id_is_a_protocol_error() -> None:
    async with scripted_peer() as (client, peer, _inbox):
        await peer.send(encode_message({"jsonrpc": "2.0", "id": 99, "result": 1}))
        await peer.send(encode_message({"jsonrpc": "2.0", "method": "after"}))
        await client.wait_notification("after", timeout=10)
        assert client.protocol_errors == ["response to unknown request id 99"]


async def test_an_exception_in_the_block_leaves_it_unwrapped() -> None:
    cause = ValueError("root cause")
    with pytest.raises(LspResponseError) as raised:
        async with scripted_peer():
            raise LspResponseError(1, "from the test body") from cause
    assert raised.value.__cause__ is cause
