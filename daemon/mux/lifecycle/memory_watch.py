"""A server's memory, measured over its whole process group, and the recycling of a bloated one.

Language servers grow: a shared pyright answering thousands of searches can
triple its resident memory. The supervisor starts `memory_task` beside each
server process; past the configured limit, and only while no request is in
flight, the process is recycled: stopped and started again with its open
documents replayed, which clients see at most as a short wait.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import anyio

if TYPE_CHECKING:
    from lensmux.daemon.mux.instance import Instance

log = logging.getLogger(__name__)

_PROC = Path("/proc")
_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


@dataclass(slots=True)
class MemorySample:
    """The last measurement of one server's process group."""

    rss_bytes: int = 0
    processes: int = 0
    recycles: int = 0


def group_rss(pgid: int) -> tuple[int, int]:
    """Resident bytes and process count of every process in group `pgid` (0, 0 where /proc is absent)."""
    total = count = 0
    try:
        entries = list(_PROC.iterdir())
    except OSError:
        return 0, 0
    for entry in entries:
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_bytes()
            # Field 2 (comm) may hold spaces and parentheses: split after its last ')'.
            fields = stat[stat.rindex(b")") + 2 :].split()
            # fields[0] is the state: a zombie holds no memory and is no longer running.
            if int(fields[2]) != pgid or fields[0] == b"Z":
                continue
            statm = (entry / "statm").read_bytes().split()
        except (OSError, ValueError, IndexError):
            continue  # the process ended while we looked
        total += int(statm[1]) * _PAGE
        count += 1
    return total, count


async def memory_task(instance: Instance, pgid: int) -> None:
    """Sample the server's memory; recycle it once past the limit and quiet."""
    policy = instance.daemon_config.memory
    limit = (instance.config.memory_limit_mb or policy.server_limit_mb) * 1024 * 1024
    sample = instance.memory
    started = anyio.current_time()
    # At spawn a configured wrapper may be all that runs (a server's entry point, before its child
    # starts): sample again after 1, 2, 4... seconds, so `lensmux status` shows the server itself soon.
    delay = min(1.0, policy.check_interval)
    while True:
        sample.rss_bytes, sample.processes = await anyio.to_thread.run_sync(group_rss, pgid)
        over = limit > 0 and sample.rss_bytes > limit
        if over and anyio.current_time() - started >= policy.min_uptime and _quiet(instance):
            sample.recycles += 1
            reason = f"recycled: {sample.rss_bytes // (1024 * 1024)} MiB over the {limit // (1024 * 1024)} MiB limit"
            log.warning("%s: %s", instance.name, reason)
            instance.supervisor.recycle(reason)
            return
        await anyio.sleep(delay)
        delay = min(delay * 2, policy.check_interval)


def _quiet(instance: Instance) -> bool:
    """Nothing in flight and the server is not indexing: a restart loses no answer."""
    return instance.ready and len(instance.pending) == 0 and not instance.adapter.indexing()
