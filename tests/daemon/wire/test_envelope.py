"""Envelopes: classification, raw payloads forwarded byte for byte, error codes."""

from __future__ import annotations

import json

import pytest
from msgspec import Raw

from lensmux.daemon.wire import envelope as ev
from lensmux.daemon.wire.envelope import ErrorCode


def test_request_notification_response_are_told_apart() -> None:
    assert ev.decode(b'{"jsonrpc":"2.0","id":1,"method":"m"}').is_request
    assert ev.decode(b'{"jsonrpc":"2.0","method":"m"}').is_notification
    assert ev.decode(b'{"jsonrpc":"2.0","id":"x","result":null}').is_response
    assert ev.decode(b'{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"m"}}').is_response


def test_params_are_forwarded_verbatim_with_a_new_id() -> None:
    params = b'{ "b" : [1, 2.50, "\\u00e9"],"a":{}}'
    env = ev.decode(b'{"jsonrpc":"2.0","id":7,"method":"x","params":' + params + b"}")
    assert isinstance(env.params, Raw)
    out = ev.request(1234, "x", env.params)
    assert params in out
    assert json.loads(out)["id"] == 1234


def test_null_result_is_kept_distinct_from_no_result() -> None:
    env = ev.decode(b'{"jsonrpc":"2.0","id":1,"result":null}')
    assert bytes(env.result) == b"null"  # type: ignore[arg-type]
    assert b'"result":null' in ev.encode(env)


@pytest.mark.parametrize(
    ("body", "code"),
    [
        (b"{not json", ErrorCode.PARSE_ERROR),
        (b'{"method":"\xff"}', ErrorCode.PARSE_ERROR),
        (b'{"jsonrpc":"2.0","id":1,"method":"x","params":"\xc3\x28"}', ErrorCode.PARSE_ERROR),
        (b"42", ErrorCode.INVALID_REQUEST),
        (b"[]", ErrorCode.INVALID_REQUEST),
        (b'[{"jsonrpc":"2.0","method":"x"}]', ErrorCode.INVALID_REQUEST),
        (b'{"jsonrpc":"2.0"}', ErrorCode.INVALID_REQUEST),
        (b'{"jsonrpc":"2.0","id":1}', ErrorCode.INVALID_REQUEST),
        (b'{"jsonrpc":"2.0","id":1.5,"method":"x"}', ErrorCode.INVALID_REQUEST),
        (b'{"jsonrpc":"2.0","id":null,"method":"x"}', ErrorCode.INVALID_REQUEST),
        (b'{"jsonrpc":"2.0","method":3}', ErrorCode.INVALID_REQUEST),
    ],
)
def test_bad_bodies_map_to_the_specified_error_code(body: bytes, code: ErrorCode) -> None:
    with pytest.raises(ev.EnvelopeError) as err:
        ev.decode(body)
    assert err.value.code == code


def test_error_response_shape() -> None:
    out = json.loads(ev.error_response(None, ErrorCode.PARSE_ERROR, "bad"))
    assert out == {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "bad"}}
