"""When an instance's periodic tasks next have something to do, so that an idle daemon sleeps.

Instead of waking every quarter second to find nothing due, the timeout task
sleeps until the earliest deadline of what is in flight; with nothing in flight,
until the shortest timeout any method has (a request sent meanwhile cannot be
due sooner). The idle task sleeps until the instance could first be idle long
enough. Both recompute on waking, so a deadline that moved is never missed.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from lensmux.daemon.mux.instance import Instance
    from lensmux.daemon.mux.requests.pending import Pending

# Parked diagnostic pulls are also answered when their document closes: checked this often.
PARKED_CHECK = 0.25
# Never spin: a deadline already past is looked at after this long.
_MIN_SLEEP = 0.01


def next_timeout_check(instance: Instance) -> float:
    """Seconds until a client request or a parked pull of `instance` can next be due."""
    if instance.diagnostics.parked:
        return PARKED_CHECK
    timeouts = instance.config.timeouts
    now = time.monotonic()
    soonest = min([timeouts.default, *timeouts.methods.values()])
    for entry in instance.pending.entries():
        due = due_at(entry, timeouts.for_method(entry.method))
        if due is not None:
            soonest = min(soonest, due - now)
    return max(soonest, _MIN_SLEEP)


def due_at(entry: Pending, limit: float) -> float | None:
    """When the timeout task next acts on `entry` (monotonic), or None if it never does.

    A client's request fails at its method's timeout; one nobody waits for any more is
    forgotten at twice that; the daemon's own request kept only for the cache is given
    up on at its timeout; the daemon's own asker otherwise keeps its own time.
    """
    if entry.client is None:
        return entry.started + limit if entry.detached else None
    return entry.started + (2 * limit if entry.detached and not entry.followers else limit)


def next_idle_check(instance: Instance, idle_timeout: float) -> float:
    """Seconds until `instance` can first have been without clients for `idle_timeout`."""
    if instance.idle_since is None or instance.clients:
        # Whoever leaves from now on leaves at the earliest now.
        return max(idle_timeout, _MIN_SLEEP)
    return max(instance.idle_since + idle_timeout - time.monotonic(), _MIN_SLEEP)
