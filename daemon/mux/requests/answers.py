"""Answering client requests that the server will not answer normally.

A request may have followers (identical concurrent requests coalesced onto it),
may be cancelled or time out, or may lose its server: each case answers the
leader and every follower exactly once, under their own ids.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

import anyio

from lensmux.daemon.mux.diagnostics import diagnostics_pull
from lensmux.daemon.mux.requests.deadlines import due_at, next_timeout_check
from lensmux.daemon.mux.requests.pending import Pending
from lensmux.daemon.wire import envelope as ev
from lensmux.daemon.wire.envelope import Envelope, ErrorCode

if TYPE_CHECKING:
    from lensmux.daemon.mux.instance import Instance

log = logging.getLogger(__name__)


def forget_inflight(instance: Instance, entry: Pending) -> None:
    if entry.cache_key is not None and instance.inflight.get(entry.cache_key.key) is entry:
        del instance.inflight[entry.cache_key.key]


def answer_all(entry: Pending, body_for_leader: bytes | None, error: tuple[int, str] | None = None) -> None:
    """Send the leader its answer (if it still waits) and every coalesced follower the same, under its own id."""
    if body_for_leader is not None and entry.client is not None:
        entry.client.send(body_for_leader)
    for follower, fid in entry.followers:
        if error is not None:
            follower.reply_error(fid, error[0], error[1])
        elif body_for_leader is not None:
            env = ev.decode(body_for_leader)
            follower.send(ev.encode(Envelope(id=fid, result=env.result, error=env.error)))
    entry.followers.clear()


def fail_pending(instance: Instance, entry: Pending, reason: str) -> None:
    """Answer a request that will never get its server answer."""
    message = f"{instance.key.server}: {reason}"
    forget_inflight(instance, entry)
    if entry.done is not None:
        entry.failure = message
        entry.done.set()
        return
    body = None
    if not entry.detached and entry.client is not None:
        entry.detached = True
        body = ev.error_response(entry.client_id, ErrorCode.REQUEST_FAILED, message)
    answer_all(entry, body, (ErrorCode.REQUEST_FAILED, message))


async def timeout_task(instance: Instance) -> None:
    """Fail client requests past their method's timeout and cancel them at the server."""
    timeouts = instance.config.timeouts
    while True:
        await anyio.sleep(next_timeout_check(instance))
        now = time.monotonic()
        diagnostics_pull.expire_parked(instance)
        for entry in instance.pending.entries():
            limit = timeouts.for_method(entry.method)
            due = due_at(entry, limit)
            if due is None or now < due:
                continue
            if entry.client is None:
                # The daemon's own request, kept only so its answer is cached: give up on it now.
                instance.pending.pop(entry.server_id)
                await instance.cancel_at_server(entry.server_id, entry.method, f"unanswered after {limit:g}s")
                continue
            if entry.detached and not entry.followers:
                # Nobody waits any more; forget it once the server had ample time.
                instance.pending.pop(entry.server_id)
                continue
            message = f"{instance.key.server}: {entry.method} timed out after {limit:g}s"
            body = None if entry.detached else ev.error_response(entry.client_id, ErrorCode.REQUEST_FAILED, message)
            entry.detached = True
            forget_inflight(instance, entry)
            answer_all(entry, body, (ErrorCode.REQUEST_FAILED, message))
            log.warning("%s: %s", instance.name, message)
            await instance.cancel_at_server(entry.server_id, entry.method, f"timed out after {limit:g}s")
            instance.note_failure(message)
