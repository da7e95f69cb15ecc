"""A client's request the shared server is asked as several, answered once from all of their answers.

The server alone answers some clients otherwise than it answers the daemon, in a way one of
its answers to the daemon cannot be reshaped into (pyright's definition without the client's
declaration capability: adapters/pyright/pyright_definitions.py). The adapter names the
methods to ask (`Adapter.asked_as`) and merges their answers (`Adapter.merged`).

Each part is a request of the daemon's in the pending table, tied to its `SplitRequest`; the
client's id maps to the split, so its `$/cancelRequest` cancels every part. The client gets
one answer: the merged result once every part has answered, else the first error a part got
(as the server sent it), a timeout, or the server's loss; after an error or a timeout the
parts still waiting are cancelled at the server, as nobody would read their answers. Parts
neither join other requests nor fill the cache: their answers are the server's to the daemon,
and the client's is only their merge.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from msgspec import UNSET, Raw, UnsetType

from lensmux.daemon.mux.errors import ServerUnavailable
from lensmux.daemon.mux.requests.pending import Pending
from lensmux.daemon.wire import envelope as ev
from lensmux.daemon.wire.envelope import Envelope, ErrorCode, Id

if TYPE_CHECKING:
    from lensmux.daemon.mux.clients.client_session import ClientSession
    from lensmux.daemon.mux.instance import Instance

# Progress and partial results go to the client's own tokens; the parts carry none (the
# methods split so far report neither).
_TOKENS = ("workDoneToken", "partialResultToken")


@dataclass(slots=True, eq=False)
class SplitRequest:
    """One client request asked of the server as `parts`, answered once."""

    client: ClientSession
    client_id: Id
    method: str
    parts: list[Pending] = field(default_factory=list)
    results: dict[int, Any] = field(default_factory=dict)
    # The client got its answer (or gave up on it): whatever arrives later is dropped.
    settled: bool = False


def asked_as(instance: Instance, client: ClientSession, method: str) -> tuple[str, ...] | None:
    """The methods the server is asked for this client's `method`; None: the request goes as it is."""
    adapter = instance.adapter
    return adapter.asked_as(method, client.capabilities) if method in adapter.split_methods else None


async def ask(instance: Instance, client: ClientSession, env: Envelope, methods: tuple[str, ...]) -> None:
    """Ask the server each of `methods` at the params of the client's request `env`; answered once all have answered."""
    assert isinstance(env.method, str) and env.id is not UNSET and env.id is not None
    refusal = await instance.refusal(env.method)
    if refusal is not None:
        client.reply_error(env.id, ErrorCode.REQUEST_FAILED, refusal)
        return
    split = SplitRequest(client, env.id, env.method)
    params = _without_tokens(env.params)
    bodies = []
    for method in methods:
        entry = instance.pending.add_part(method, client, env.id, split)
        split.parts.append(entry)
        bodies.append(ev.request(entry.server_id, method, params))
    try:
        for body in bodies:
            await instance.send_to_server(body)
    except ServerUnavailable as exc:
        instance.note_failure(str(exc))
        failed(instance, split.parts[0], str(exc))


def _without_tokens(params: Raw | UnsetType) -> Raw | UnsetType:
    value = ev.decode_value(params)
    if not isinstance(value, dict) or not any(key in value for key in _TOKENS):
        return params
    return ev.encode_value({key: item for key, item in value.items() if key not in _TOKENS})


def answered(instance: Instance, entry: Pending, env: Envelope) -> list[Pending]:
    """A part's answer (already out of the pending table): the client's answer once every part has one.

    An error answers the client at once; the other parts still waiting are taken out of the
    pending table and returned, for the caller to cancel at the server.
    """
    split = entry.split
    assert split is not None
    if split.settled:
        return []
    if env.error is not UNSET or env.result is UNSET:
        # The server's own error, as it would have sent it for the client's request.
        _settle(instance, split, ev.encode(Envelope(id=split.client_id, error=env.error)))
        return _drop_waiting(instance, split)
    split.results[entry.server_id] = ev.decode_value(env.result)
    if len(split.results) < len(split.parts):
        return []
    results = [split.results[part.server_id] for part in split.parts]
    merged = instance.adapter.merged(split.method, results)
    instance.requests_served += 1
    _settle(instance, split, ev.response(split.client_id, ev.encode_value(merged)))
    return []


def failed(instance: Instance, entry: Pending, message: str) -> list[Pending]:
    """A part that will get no answer (timed out, the server gone): the client hears `message`.

    The other parts still waiting are taken out of the pending table and returned, for the
    caller to cancel at the server.
    """
    split = entry.split
    assert split is not None
    if split.settled:
        return []
    _settle(instance, split, ev.error_response(split.client_id, ErrorCode.REQUEST_FAILED, message))
    return _drop_waiting(instance, split)


async def cancel(instance: Instance, client: ClientSession, client_id: Id) -> bool:
    """The client's `$/cancelRequest` for `client_id`, if that is a split: it is told so now, every part cancelled."""
    split = instance.pending.find_split(client, client_id)
    if split is None:
        return False
    _settle(instance, split, ev.error_response(client_id, ErrorCode.REQUEST_CANCELLED, "request cancelled"))
    for part in _drop_waiting(instance, split):
        await instance.cancel_at_server(part.server_id, part.method, f"cancelled by {client.name}")
    return True


async def abandon(instance: Instance, client: ClientSession) -> None:
    """The client left: its splits answer nobody, and their parts still waiting are cancelled."""
    for split in instance.pending.splits_of(client):
        split.settled = True
        instance.pending.split_settled(split)
        for part in _drop_waiting(instance, split):
            await instance.cancel_at_server(part.server_id, part.method, f"abandoned: {client.name} left")


def _settle(instance: Instance, split: SplitRequest, body: bytes) -> None:
    split.settled = True
    instance.pending.split_settled(split)
    if split.client.id in instance.clients:
        split.client.send(body)


def _drop_waiting(instance: Instance, split: SplitRequest) -> list[Pending]:
    return [part for part in split.parts if instance.pending.pop(part.server_id) is not None]
