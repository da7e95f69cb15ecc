"""The daemon's own requests to a server (search expansion, indexing, MCP tools): cached, joined, finished.

They go through the same response cache as the clients' requests. An identical
question already in flight (the same search asked twice, an assistant repeating
itself) waits for that one rather than asking the server again. A request whose
asker gives up (a search's expansion budget) is left to finish when the cache will
keep its answer, so the same question next time is answered at once; otherwise it
is cancelled at the server (cancel_shield.py decides whether the cancel is sent).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import anyio
import msgspec

from lensmux.daemon.mux.errors import CircuitOpen, RequestTimedOut, ServerRequestFailed, ServerUnavailable
from lensmux.daemon.mux.requests.pending import Pending
from lensmux.daemon.wire import envelope as ev

if TYPE_CHECKING:
    from lensmux.daemon.mux.instance import Instance
    from lensmux.daemon.mux.requests.cache import CacheKey

log = logging.getLogger(__name__)

# Finished entries are dropped from the join table once it holds this many.
_JOIN_TABLE_PRUNE = 256


async def request(instance: Instance, method: str, params: Any, limit: float, *, background: bool = False) -> Any:
    """Ask the server `method` with `params` as the daemon; the decoded result."""
    discovery = instance.warmup.discovery
    if discovery.queues(method, own=True):
        # As a client's would (discovery.py): an index run's symbol requests must not keep the
        # server from discovering its workspace, nor a search expand from half of it; and a
        # question must not overtake an editor's edit that waited before it.
        async with discovery.in_order(method, own=True):
            sent = await _send(instance, method, params, limit, background)
    else:
        sent = await _send(instance, method, params, limit, background)
    if isinstance(sent, _Hit):
        return sent.value
    entry, storable = sent
    return await _answer(instance, entry, method, limit, storable=storable)


class _Hit:
    """A cached answer, decoded."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value


async def _send(
    instance: Instance, method: str, params: Any, limit: float, background: bool
) -> tuple[Pending, bool] | _Hit:
    """The cached answer, or the entry of the request now sent (or joined), and whether its answer is kept."""
    key = instance.cache.key_for(method, params)
    storable = key is not None and instance.caching_allowed(method)
    if key is not None:
        hit = instance.cache.get(key)
        if hit is not None:
            return _Hit(msgspec.json.decode(hit))
    entry = _joinable(instance, key) if storable else None
    if entry is None:
        if not instance.breaker.allow():
            raise CircuitOpen(instance.breaker.rejection())
        await instance.wait_ready(limit)
        if not instance.ready:
            raise ServerUnavailable(f"{instance.name} is not running ({instance.state})")
        entry = instance.pending.add_internal(method, background=background)
        if background:
            instance.own_slot.sent(instance.pending, method)
        if key is not None:
            entry.cache_key, entry.generation = key, instance.cache.generation_for(key)
            entry.storable = storable
            if storable:
                _remember(instance, key, entry)
        await instance.send_to_server(ev.request(entry.server_id, method, ev.encode_value(params)))
    return entry, storable


def _joinable(instance: Instance, key: CacheKey | None) -> Pending | None:
    """An identical request of the daemon's own still in flight for the current generation."""
    if key is None:
        return None
    entry = instance.own_inflight.get(key.key)
    if entry is None or entry.done is None or entry.done.is_set():
        return None
    if entry.generation != instance.cache.generation_for(key) or instance.pending.get(entry.server_id) is None:
        return None
    return entry


def _remember(instance: Instance, key: CacheKey, entry: Pending) -> None:
    table = instance.own_inflight
    if len(table) >= _JOIN_TABLE_PRUNE:
        for stale in [k for k, e in table.items() if e.done is None or e.done.is_set()]:
            del table[stale]
    table[key.key] = entry


async def _answer(instance: Instance, entry: Pending, method: str, limit: float, *, storable: bool) -> Any:
    assert entry.done is not None
    try:
        with anyio.move_on_after(limit):
            await entry.done.wait()
    except anyio.get_cancelled_exc_class():
        with anyio.CancelScope(shield=True):
            if storable and not entry.done.is_set():
                # The asker gave up on an answer the cache keeps: the server finishes it (the
                # timeout task gives up on it at the method's timeout).
                entry.detached = True
                log.debug(
                    "%s: %s (server id %d) abandoned by the daemon's own asker; left to finish for the cache",
                    instance.name,
                    method,
                    entry.server_id,
                )
            elif instance.pending.pop(entry.server_id) is not None:
                await instance.cancel_at_server(entry.server_id, method, "abandoned by the daemon's own asker")
        raise
    if not entry.done.is_set():
        if instance.pending.pop(entry.server_id) is not None:
            await instance.cancel_at_server(entry.server_id, method, f"timed out after {limit:g}s")
            instance.note_failure(f"{method} timed out after {limit:g}s")
        raise RequestTimedOut(f"{instance.name}: {method} timed out after {limit:g}s")
    if entry.failure is not None:
        raise ServerUnavailable(entry.failure)
    assert entry.reply is not None
    err = ev.error_of(entry.reply.error)
    if err is not None:
        raise ServerRequestFailed(err.code, f"{instance.name}: {method}: {err.message}")
    return ev.decode_value(entry.reply.result)
