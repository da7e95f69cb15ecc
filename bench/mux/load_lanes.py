"""Load phases for the resilience benchmark: many clients, every answer accounted for, cache hits counted.

A `Lane` is one logical client: a script of requests (`Ask`) and edits (`Edit`)
sent over one `LspClient` connection with up to `inflight` requests outstanding.
Lanes may share a connection (the direct baseline: one stdio pipe to one
server). Every id sent is remembered with its ask; after the phase each
connection's message log is counted per id, so an answer that never came
(lost), came twice (duplicated) or carried another request's result
(misrouted) is counted rather than merely noticed.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import anyio
from support.daemon_proc import DaemonProc
from support.lspclient import LspClient, LspConnectionClosed, LspResponseError, LspTimeout, RequestId

from bench.stats import Summary, memory_kib, process_cpu_seconds

Verdict = Literal["ok", "misrouted", "unexpected"]
# Answers that arrive after the last request finished still count (as duplicates).
SETTLE_S = 0.5


@dataclass(frozen=True, slots=True)
class Ask:
    """One request of a lane and the judge of its answer's result."""

    method: str
    params: Any
    check: Callable[[Any], Verdict]


@dataclass(frozen=True, slots=True)
class Edit:
    """A document change a lane sends between its requests."""

    apply: Callable[[LspClient], Awaitable[None]]


Step = Ask | Edit


@dataclass(slots=True)
class Lane:
    """One logical client: its connection and its script."""

    name: str
    client: LspClient
    steps: Sequence[Step]


@dataclass(slots=True)
class Tally:
    """What one phase observed while it ran."""

    latencies_ns: dict[str, list[int]] = field(default_factory=dict)
    errors: Counter[str] = field(default_factory=Counter)
    error_samples: list[str] = field(default_factory=list)
    timeouts: int = 0
    connection_failures: int = 0
    edits: int = 0
    sent: dict[int, dict[RequestId, Ask]] = field(default_factory=dict)
    # Where each connection's message log stood when the phase began.
    log_start: dict[int, int] = field(default_factory=dict)

    def record_error(self, method: str, exc: Exception) -> None:
        """An answer that was a JSON-RPC error (an answer nonetheless)."""
        code = exc.code if isinstance(exc, LspResponseError) else type(exc).__name__
        self.errors[f"{method} {code}"] += 1
        if len(self.error_samples) < 10:
            self.error_samples.append(f"{method}: {exc}")


async def _lane_worker(lane: Lane, steps: Iterator[Step], tally: Tally, deadline_s: float) -> None:
    sent = tally.sent.setdefault(id(lane.client), {})
    clock = time.perf_counter_ns
    # The workers of a lane share one iterator: together they walk the script once.
    for step in steps:
        if isinstance(step, Edit):
            await step.apply(lane.client)
            tally.edits += 1
            continue
        start = clock()
        try:
            pending = await lane.client.start_request(step.method, step.params)
        except LspConnectionClosed:
            tally.connection_failures += 1
            return
        sent[pending.id] = step
        try:
            await pending.result(timeout=deadline_s)
        except LspResponseError as exc:
            tally.record_error(step.method, exc)
        except LspTimeout:
            tally.timeouts += 1
            continue
        except LspConnectionClosed:
            tally.connection_failures += 1
            return
        tally.latencies_ns.setdefault(step.method, []).append(clock() - start)


def account(clients: Sequence[LspClient], tally: Tally) -> dict[str, int]:
    """Count every response each connection received since the phase began against what it sent."""
    counts = Counter[str]()
    for client in clients:
        sent = tally.sent.get(id(client), {})
        answers = Counter[RequestId]()
        for message in client.messages[tally.log_start.get(id(client), 0) :]:
            if "method" in message or "id" not in message:
                continue
            rid = message["id"]
            ask = sent.get(rid) if isinstance(rid, int | str) else None
            if ask is None:
                # An answer to an id this connection never used belongs to someone else.
                counts["misrouted"] += 1
                continue
            answers[rid] += 1
            if answers[rid] > 1:
                counts["duplicated"] += 1
            elif "result" in message:
                counts[ask.check(message["result"])] += 1
            else:
                counts["error_answers"] += 1
        counts["requests"] += len(sent)
        counts["lost"] += sum(1 for rid in sent if answers[rid] == 0)
    return {k: counts[k] for k in ("requests", "ok", "error_answers", "lost", "duplicated", "misrouted", "unexpected")}


@dataclass(slots=True)
class RssSampler:
    """Peak resident memory of one process, polled while a phase runs."""

    pid: int
    interval_s: float = 0.05
    peak_kib: int = 0

    async def sample_task(self, stop: anyio.Event) -> None:
        """Poll VmRSS until `stop` is set."""
        while not stop.is_set():
            self.peak_kib = max(self.peak_kib, memory_kib(self.pid, "VmRSS"))
            with anyio.move_on_after(self.interval_s):
                await stop.wait()

    def result(self) -> dict[str, float]:
        """Peak while sampled, and the kernel's lifetime high-water mark (VmHWM), in MiB."""
        return {
            "peak_rss_mib": round(self.peak_kib / 1024, 1),
            "vmhwm_mib": round(memory_kib(self.pid, "VmHWM") / 1024, 1),
        }


def cache_methods(daemon: DaemonProc, server: str) -> dict[str, dict[str, int]]:
    """The daemon's response-cache hits and misses per method for one server's instances, so far."""
    out: dict[str, dict[str, int]] = {}
    for inst in daemon.instances(server):
        for method, stats in inst["cache"]["methods"].items():
            slot = out.setdefault(method, {"hits": 0, "misses": 0})
            slot["hits"] += stats["hits"]
            slot["misses"] += stats["misses"]
    return out


def cache_delta(before: dict[str, dict[str, int]], after: dict[str, dict[str, int]]) -> dict[str, Any]:
    """Hits, misses and hit rate per method and overall between two `cache_methods` readings."""
    methods: dict[str, Any] = {}
    for method, now in after.items():
        old = before.get(method, {"hits": 0, "misses": 0})
        hits, misses = now["hits"] - old["hits"], now["misses"] - old["misses"]
        if hits or misses:
            methods[method] = {"hits": hits, "misses": misses, "hit_rate": round(hits / (hits + misses), 4)}
    hits = sum(m["hits"] for m in methods.values())
    misses = sum(m["misses"] for m in methods.values())
    return {"hits": hits, "misses": misses, "hit_rate": round(hits / max(1, hits + misses), 4), "methods": methods}


def _cpu(pids: dict[str, int]) -> dict[str, float]:
    out = {"load generator": time.process_time()}
    for name, pid in pids.items():
        try:
            out[name] = process_cpu_seconds(pid)
        except OSError:
            out[name] = float("nan")
    return out


async def run_phase(
    lanes: Sequence[Lane],
    *,
    inflight: int,
    deadline_s: float,
    pids: dict[str, int],
    rss_pid: int | None = None,
) -> dict[str, Any]:
    """Run every lane to the end of its script at once; figures and the answer accounting.

    `pids` names processes whose CPU time over the phase is reported (the load
    generator's own is always); `rss_pid` is the process whose memory is sampled.
    """
    tally = Tally()
    for lane in lanes:
        tally.sent.setdefault(id(lane.client), {})
        tally.log_start[id(lane.client)] = len(lane.client.messages)
    sampler = RssSampler(rss_pid) if rss_pid is not None else None
    stop = anyio.Event()
    cpu_before = _cpu(pids)
    started = time.perf_counter()
    async with anyio.create_task_group() as tg:
        if sampler is not None:
            tg.start_soon(sampler.sample_task, stop)
        async with anyio.create_task_group() as lanes_tg:
            for lane in lanes:
                steps = iter(lane.steps)
                for _ in range(inflight):
                    lanes_tg.start_soon(_lane_worker, lane, steps, tally, deadline_s)
        elapsed = time.perf_counter() - started
        cpu_after = _cpu(pids)
        await anyio.sleep(SETTLE_S)
        stop.set()
    clients = list({id(lane.client): lane.client for lane in lanes}.values())
    accounting = account(clients, tally)
    answered = sum(len(v) for v in tally.latencies_ns.values()) + sum(tally.errors.values())
    pooled = [s for v in tally.latencies_ns.values() for s in v]
    result: dict[str, Any] = {
        "lanes": len(lanes),
        "connections": len(clients),
        "inflight_per_lane": inflight,
        "elapsed_s": round(elapsed, 3),
        "answered": answered,
        "throughput_per_s": round(answered / elapsed, 1) if elapsed else 0.0,
        "latency": Summary.of_ns(pooled).as_dict() if pooled else None,
        "methods": {m: Summary.of_ns(v).as_dict() for m, v in sorted(tally.latencies_ns.items())},
        "edits": tally.edits,
        "errors": dict(tally.errors),
        "error_samples": tally.error_samples,
        "timeouts": tally.timeouts,
        "connection_failures": tally.connection_failures,
        "accounting": accounting,
        "cpu_s": {n: round(cpu_after[n] - cpu_before[n], 2) for n in cpu_before},
    }
    if sampler is not None:
        result["memory"] = sampler.result()
    for client in clients:
        # The logs were only kept for the accounting; a long run would hold them all.
        client.messages.clear()
        client.notifications.clear()
    return result
