"""JSON-RPC 2.0 envelopes decoded once with msgspec; payloads stay raw bytes.

`params`, `result` and `error` are `msgspec.Raw`: a message that is only
forwarded is re-encoded around the same payload bytes, never parsed.
"""

from __future__ import annotations

import enum
from typing import Any

import msgspec
from msgspec import UNSET, Raw, UnsetType

from lensmux.daemon.wire.framing import WireError

Id = int | str

__all__ = [
    "NULL",
    "UNSET",
    "Envelope",
    "EnvelopeError",
    "ErrorCode",
    "ErrorObject",
    "Id",
    "InvalidParams",
    "InvalidRequest",
    "ParseError",
]


class ErrorCode(enum.IntEnum):
    """JSON-RPC and LSP error codes the daemon sends."""

    PARSE_ERROR = -32700
    INVALID_REQUEST = -32600
    METHOD_NOT_FOUND = -32601
    INVALID_PARAMS = -32602
    INTERNAL_ERROR = -32603
    SERVER_NOT_INITIALIZED = -32002
    UNKNOWN_ERROR = -32001
    REQUEST_FAILED = -32803
    SERVER_CANCELLED = -32802
    REQUEST_CANCELLED = -32800


class EnvelopeError(WireError):
    """A well-framed body that is not a usable JSON-RPC message.

    `id` is the request's id when it could still be read, so the sender's
    request gets its error answer instead of waiting forever.
    """

    code: ErrorCode = ErrorCode.INVALID_REQUEST

    def __init__(self, message: str, id_: Id | None = None) -> None:
        super().__init__(message)
        self.id = id_


class ParseError(EnvelopeError):
    """The body is not valid UTF-8 JSON."""

    code = ErrorCode.PARSE_ERROR


class InvalidRequest(EnvelopeError):
    """Valid JSON, but not a JSON-RPC request, notification or response."""

    code = ErrorCode.INVALID_REQUEST


class InvalidParams(EnvelopeError):
    """A payload the daemon had to read is not JSON it can use (numbers out of range, nesting)."""

    code = ErrorCode.INVALID_PARAMS


class Envelope(msgspec.Struct, omit_defaults=False):
    """One JSON-RPC message; exactly one of the three shapes after `classify`."""

    jsonrpc: str = "2.0"
    id: Id | UnsetType | None = UNSET
    method: str | UnsetType = UNSET
    params: Raw | UnsetType = UNSET
    result: Raw | UnsetType = UNSET
    error: Raw | UnsetType = UNSET

    @property
    def rid(self) -> Id | None:
        """The id, with an absent one as None."""
        return None if isinstance(self.id, UnsetType) else self.id

    @property
    def is_request(self) -> bool:
        """A method and an id: it wants an answer."""
        return self.method is not UNSET and self.id is not UNSET

    @property
    def is_notification(self) -> bool:
        """A method and no id."""
        return self.method is not UNSET and self.id is UNSET

    @property
    def is_response(self) -> bool:
        """An id and a result or error, no method."""
        return self.method is UNSET


class ErrorObject(msgspec.Struct, omit_defaults=True):
    """The `error` member of a response."""

    code: int
    message: str
    data: Any = None


class _IdProbe(msgspec.Struct):
    """Just enough of a rejected body to answer the request it meant to be."""

    id: Any = None
    method: Any = UNSET


class _Document(msgspec.Struct):
    uri: Any = None


class _DocumentParams(msgspec.Struct):
    """Just `textDocument.uri` of a request's or notification's params (a didOpen's text skipped, not built)."""

    textDocument: _Document | None = None


_decoder = msgspec.json.Decoder(Envelope)
_probe_decoder = msgspec.json.Decoder(_IdProbe)
_document_decoder = msgspec.json.Decoder(_DocumentParams)
_encoder = msgspec.json.Encoder()
_error_decoder = msgspec.json.Decoder(ErrorObject)
NULL = Raw(b"null")
# JSON-RPC 2.0: params is a structured value; `null` is tolerated because
# several editors send it for parameterless requests such as shutdown.
_PARAMS_HEADS = (ord("{"), ord("["))
_OBJECT = ord("{")


def decode(body: bytes) -> Envelope:
    """Decode and classify a body; raise ParseError or InvalidRequest."""
    # msgspec only checks UTF-8 inside strings it decodes; payloads kept raw
    # are not looked at, so check the whole body once here (ASCII, the usual
    # case, is checked without decoding a copy).
    if not body.isascii():
        try:
            body.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ParseError(f"body is not valid UTF-8 (byte {exc.start})") from None
    try:
        env = _decoder.decode(body)
    except msgspec.ValidationError as exc:
        if body.lstrip()[:1] == b"[":
            raise InvalidRequest("batch messages are not supported by LSP") from None
        raise InvalidRequest(f"not a JSON-RPC message: {exc}", _probe_id(body)) from None
    except msgspec.DecodeError as exc:
        raise ParseError(f"invalid JSON: {exc}") from None
    except RecursionError:
        raise ParseError("JSON nested too deeply") from None
    # What msgspec's types let through but JSON-RPC 2.0 forbids; the checks are
    # written out here rather than in a helper because every message passes them.
    # A payload's first byte is read through a memoryview, without copying the
    # rest (msgspec strips whitespace; a raw value is never empty).
    if env.jsonrpc != "2.0":
        request_id = env.id if env.method is not UNSET and isinstance(env.id, int | str) else None
        raise InvalidRequest(f'jsonrpc must be "2.0", not {env.jsonrpc[:20]!r}', request_id)
    if env.method is UNSET:
        if env.id is UNSET:
            raise InvalidRequest("message has neither method nor id")
        if env.result is UNSET:
            if env.error is UNSET:
                raise InvalidRequest("response has neither result nor error")
        elif env.error is not UNSET:
            raise InvalidRequest("response has both result and error")
        if env.error is not UNSET and memoryview(env.error)[0] != _OBJECT:
            raise InvalidRequest("response error must be an object")
        return env
    if env.id is None:
        raise InvalidRequest("request id must not be null")
    params = env.params
    if params is not UNSET and memoryview(params)[0] not in _PARAMS_HEADS and bytes(params)[:4] != b"null":
        raise InvalidRequest("params must be an object or an array", env.id if isinstance(env.id, int | str) else None)
    return env


def _probe_id(body: bytes) -> Id | None:
    """The id of a rejected request, if the body is an object with a usable one and a method."""
    try:
        probe = _probe_decoder.decode(body)
    except (msgspec.DecodeError, RecursionError):
        return None
    rid = probe.id
    # Without a method the body may have meant to be a response: answering
    # with its id would resolve one of the sender's own requests.
    if probe.method is UNSET or isinstance(rid, bool) or not isinstance(rid, int | str):
        return None
    return rid


def encode(env: Envelope) -> bytes:
    """Encode an envelope; raw payloads are copied verbatim."""
    return _encoder.encode(env)


def encode_value(value: Any) -> Raw:
    """Encode a Python value as a raw payload."""
    return Raw(_encoder.encode(value))


def document_uri(raw: Raw | UnsetType) -> str | None:
    """`params.textDocument.uri` if it is a string; None otherwise (absent, another shape, not JSON)."""
    if raw is UNSET:
        return None
    try:
        doc = _document_decoder.decode(raw).textDocument
    except (msgspec.DecodeError, RecursionError):  # ValidationError included: params not of that shape
        return None
    uri = doc.uri if doc is not None else None
    return uri if isinstance(uri, str) else None


def decode_value(raw: Raw | UnsetType) -> Any:
    """Parse a raw payload the daemon itself needs to read; raise InvalidParams."""
    if raw is UNSET:
        return None
    try:
        return msgspec.json.decode(raw)
    except msgspec.DecodeError as exc:
        raise InvalidParams(f"unusable payload: {exc}") from None
    except RecursionError:
        raise InvalidParams("payload nested too deeply") from None


def request(id_: Id, method: str, params: Raw | UnsetType = UNSET) -> bytes:
    """Encode a request."""
    return _encoder.encode(Envelope(id=id_, method=method, params=params))


def notification(method: str, params: Raw | UnsetType = UNSET) -> bytes:
    """Encode a notification."""
    return _encoder.encode(Envelope(method=method, params=params))


def response(id_: Id | None, result: Raw) -> bytes:
    """Encode a successful response."""
    return _encoder.encode(Envelope(id=id_, result=result))


def error_response(id_: Id | None, code: int, message: str, data: Any = None) -> bytes:
    """Encode an error response."""
    err = ErrorObject(code=int(code), message=message, data=data)
    return _encoder.encode(Envelope(id=id_, error=Raw(_encoder.encode(err))))


def error_of(raw: Raw | UnsetType) -> ErrorObject | None:
    """Read the error member of a response, if it is a well-formed one."""
    if raw is UNSET:
        return None
    try:
        return _error_decoder.decode(raw)
    except (msgspec.DecodeError, RecursionError):
        return None
