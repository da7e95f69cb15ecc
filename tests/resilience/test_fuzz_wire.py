"""Hypothesis fuzzing of the framing reader and the envelope decoder, in process.

Whatever the bytes, only the documented exceptions come out: FramingError
subclasses from the reader (close the stream), EnvelopeError subclasses from
the decoder (answer and carry on). Valid messages round-trip unchanged.
"""

from __future__ import annotations

import itertools
import json
from typing import Any

import anyio
import pytest
from anyio.abc import ByteReceiveStream
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lensmux.daemon.wire import envelope as ev
from lensmux.daemon.wire.envelope import Envelope, EnvelopeError
from lensmux.daemon.wire.framing import FrameLimits, FrameReader, FramingError, frame

pytestmark = pytest.mark.anyio

# Small caps so that generated input reaches them as often as it stays below;
# structured headers get the default header cap, which leaves room for very long values.
LIMITS = FrameLimits(max_header=512, max_body=4096)
HEADER_LIMITS = FrameLimits(max_body=4096)
FUZZ = settings(max_examples=800, deadline=None, suppress_health_check=[HealthCheck.too_slow])


class ChunkStream(ByteReceiveStream):
    """Delivers the given chunks, one per receive, then end of stream."""

    def __init__(self, chunks: list[bytes]) -> None:
        self._chunks = [c for c in chunks if c]

    async def receive(self, max_bytes: int = 65536) -> bytes:
        if not self._chunks:
            raise anyio.EndOfStream
        chunk = self._chunks.pop(0)
        if len(chunk) > max_bytes:
            self._chunks.insert(0, chunk[max_bytes:])
            chunk = chunk[:max_bytes]
        return chunk

    async def aclose(self) -> None:
        self._chunks = []


def split(data: bytes, cuts: list[int]) -> list[bytes]:
    """`data` cut at the given offsets (taken modulo its length)."""
    points = sorted({c % (len(data) + 1) for c in cuts} | {0, len(data)})
    return [data[a:b] for a, b in itertools.pairwise(points)]


async def read_frames(chunks: list[bytes], limits: FrameLimits = LIMITS) -> tuple[list[bytes], FramingError | None]:
    """Every body the reader yields, and the framing error that ended it, if any."""
    reader = FrameReader(ChunkStream(chunks), limits)
    bodies: list[bytes] = []
    try:
        while (body := await reader.read()) is not None:
            bodies.append(body)
    except FramingError as exc:
        return bodies, exc
    return bodies, None


def decode_or_error(body: bytes) -> Envelope | EnvelopeError:
    """An envelope that is exactly one kind of message and re-encodes, or the documented error."""
    try:
        env = ev.decode(body)
    except EnvelopeError as exc:
        assert exc.code in {ev.ErrorCode.PARSE_ERROR, ev.ErrorCode.INVALID_REQUEST}
        assert exc.id is None or isinstance(exc.id, int | str)
        return exc
    assert [env.is_request, env.is_notification, env.is_response].count(True) == 1
    assert ev.encode(env).startswith(b'{"jsonrpc":"2.0",')
    try:
        ev.decode_value(env.params)
    except ev.InvalidParams:
        pass
    return env


# -- strategies --------------------------------------------------------------

json_scalars = (
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=12)
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=6,
)
ids = st.integers(min_value=-(2**63), max_value=2**63 - 1) | st.text(max_size=20)
methods = st.sampled_from(["initialize", "textDocument/hover", "$/cancelRequest", "x"]) | st.text(max_size=30)
structured = st.lists(json_values, max_size=4) | st.dictionaries(st.text(max_size=8), json_values, max_size=4)


@st.composite
def valid_messages(draw: st.DrawFn) -> dict[str, Any]:
    """A request, notification, or response, as an editor or a server would send it."""
    kind = draw(st.sampled_from(["request", "notification", "result", "error"]))
    message: dict[str, Any] = {"jsonrpc": "2.0"}
    if kind in {"request", "result", "error"}:
        message["id"] = draw(ids)
    if kind in {"request", "notification"}:
        message["method"] = draw(methods)
        if draw(st.booleans()):
            message["params"] = draw(structured)
    elif kind == "result":
        message["result"] = draw(json_values)
    else:
        message["error"] = {"code": draw(st.integers(-32768, 32767)), "message": draw(st.text(max_size=20))}
    return message


def encode_json(value: Any) -> bytes:
    """JSON as editors write it: UTF-8, non-ASCII kept."""
    return json.dumps(value, ensure_ascii=False).encode()


header_names = st.sampled_from(
    [b"Content-Length", b"Content-Length", b"content-length", b"CONTENT-LENGTH", b"Content-Type", b"X-Other", b""]
) | st.binary(max_size=12)
header_values = st.one_of(
    st.integers(min_value=-(10**30), max_value=10**30).map(lambda n: str(n).encode()),
    st.integers(min_value=0, max_value=40).map(lambda n: str(n).encode()),
    # int() refuses digit strings of more than 4300 digits: lengths around that limit.
    st.tuples(st.sampled_from([4299, 4300, 4301, 6000]) | st.integers(1, 6000), st.sampled_from(b"0123456789")).map(
        lambda t: bytes([t[1]]) * t[0]
    ),
    st.sampled_from([b"application/vscode-jsonrpc; charset=utf-8", b"text/plain; charset=latin-1", b""]),
    st.binary(max_size=20),
)
header_lines = st.tuples(header_names, st.sampled_from([b": ", b":", b" : ", b"", b"::"]), header_values).map(
    lambda t: t[0] + t[1] + t[2]
)


@st.composite
def header_blocks(draw: st.DrawFn) -> bytes:
    """Headers that look like LSP framing but are wrong in some way, followed by a body."""
    lines = draw(st.lists(header_lines, max_size=4))
    # Mostly proper line ends, so that what is wrong is the headers themselves.
    eol = draw(st.sampled_from([b"\r\n", b"\r\n", b"\n", b"\r"]))
    end = draw(st.sampled_from([b"\r\n\r\n", b"\r\n\r\n", b"\r\n\r\n", b"\n\n", b"", b"\r\n"]))
    body = draw(st.binary(max_size=64) | st.sampled_from([b'{"jsonrpc":"2.0","method":"x"}', b"{}", b"[1]", b""]))
    return eol.join(lines) + end + body


# -- properties --------------------------------------------------------------


@settings(FUZZ, max_examples=1500)
@given(data=st.binary(max_size=1200), cuts=st.lists(st.integers(min_value=0), max_size=6))
async def test_arbitrary_bytes_raise_only_framing_errors(data: bytes, cuts: list[int]) -> None:
    bodies, _ = await read_frames(split(data, cuts))
    for body in bodies:
        assert len(body) <= LIMITS.max_body
        decode_or_error(body)


@settings(FUZZ, max_examples=600)
@given(blocks=st.lists(header_blocks(), min_size=1, max_size=3), cuts=st.lists(st.integers(min_value=0), max_size=4))
async def test_structured_but_wrong_headers_raise_only_framing_errors(blocks: list[bytes], cuts: list[int]) -> None:
    bodies, _ = await read_frames(split(b"".join(blocks), cuts), HEADER_LIMITS)
    for body in bodies:
        decode_or_error(body)


@FUZZ
@given(
    value=json_values
    | st.dictionaries(st.sampled_from(["jsonrpc", "id", "method", "params", "result", "error"]), json_values)
)
async def test_arbitrary_json_decodes_to_an_envelope_or_an_envelope_error(value: Any) -> None:
    decode_or_error(encode_json(value))


@settings(FUZZ, max_examples=200)
@given(
    depth=st.integers(1, 5000),
    member=st.sampled_from([b"params", b"result", b"error", b"id", b"method", b"extra"]),
    opener=st.sampled_from([b"[", b'{"a":']),
)
async def test_deeply_nested_bodies_raise_only_envelope_errors(depth: int, member: bytes, opener: bytes) -> None:
    closer = b"]" if opener == b"[" else b"}"
    nested = opener * depth + b"1" + closer * depth
    decode_or_error(b'{"jsonrpc":"2.0","id":1,"method":"m","' + member + b'":' + nested + b"}")
    decode_or_error(nested)


@FUZZ
@given(
    message=valid_messages(),
    edits=st.lists(st.tuples(st.integers(min_value=0), st.integers(0, 255), st.booleans()), min_size=1, max_size=4),
)
async def test_corrupted_valid_bodies_decode_or_raise_envelope_errors(
    message: dict[str, Any], edits: list[tuple[int, int, bool]]
) -> None:
    body = bytearray(encode_json(message))
    for offset, byte, insert in edits:
        at = offset % (len(body) + 1)
        if insert or at == len(body):
            body.insert(at, byte)
        else:
            body[at] = byte
    decode_or_error(bytes(body))


@settings(FUZZ, max_examples=400)
@given(messages=st.lists(valid_messages(), min_size=1, max_size=5), cuts=st.lists(st.integers(min_value=0), max_size=8))
async def test_valid_messages_round_trip_through_framing_and_envelope(
    messages: list[dict[str, Any]], cuts: list[int]
) -> None:
    sent = [encode_json(m) for m in messages]
    bodies, error = await read_frames(split(b"".join(frame(b) for b in sent), cuts))
    if any(len(b) > LIMITS.max_body for b in sent):
        assert error is not None
        return
    assert error is None
    assert bodies == sent
    for body, message in zip(bodies, messages, strict=True):
        env = ev.decode(body)
        assert env.rid == message.get("id")
        assert json.loads(ev.encode(env)) == message
        if "params" in message:
            assert ev.decode_value(env.params) == message["params"]
