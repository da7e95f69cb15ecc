"""Resident memory of named groups of process trees, sampled while agent sessions run.

A group is a set of root pids and everything below them (a pyright of its own is a
wrapper and its node process; the daemon's tree holds its pyright). Every
`interval` seconds the sampler sums VmRSS over each group's trees; it keeps each
group's peak, the peak of all groups together, and any sample taken on request
(`mark`, for "every session has answered").
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio

from bench.stats import memory_kib


def _children() -> dict[int, list[int]]:
    """Every live process's children, from one walk of /proc."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue  # ended while we looked
        children.setdefault(ppid, []).append(int(entry.name))
    return children


def tree_rss_kib(roots: set[int], children: dict[int, list[int]] | None = None) -> int:
    """VmRSS summed over `roots` and all their descendants (0 for the ones gone)."""
    children = _children() if children is None else children
    pids: set[int] = set()
    todo = list(roots)
    while todo:
        pid = todo.pop()
        if pid not in pids:
            pids.add(pid)
            todo.extend(children.get(pid, []))
    return sum(memory_kib(pid) for pid in pids)


def _mib(kib: int) -> float:
    return round(kib / 1024, 1)


@dataclass
class TreeSampler:
    """Samples named groups of process trees until stopped."""

    groups: dict[str, set[int]]
    interval: float = 0.5
    peaks: dict[str, int] = field(default_factory=dict)
    total_peak: int = 0
    marks: dict[str, dict[str, int]] = field(default_factory=dict)
    samples: int = 0
    _stopped: anyio.Event = field(default_factory=anyio.Event)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, group: str, pid: int) -> None:
        """A process whose tree belongs to `group` from now on."""
        with self._lock:
            self.groups.setdefault(group, set()).add(pid)

    def sample(self) -> dict[str, int]:
        """One sample of every group now (KiB), folded into the peaks; safe from any thread."""
        with self._lock:
            groups = {name: set(roots) for name, roots in self.groups.items()}
        children = _children()
        now = {name: tree_rss_kib(roots, children) for name, roots in groups.items()}
        with self._lock:
            for name, kib in now.items():
                self.peaks[name] = max(self.peaks.get(name, 0), kib)
            self.total_peak = max(self.total_peak, sum(now.values()))
            self.samples += 1
        return now

    async def mark(self, label: str) -> None:
        """Keep a sample taken now under `label`."""
        self.marks[label] = await anyio.to_thread.run_sync(self.sample)

    async def run(self) -> None:
        """Sample every `interval` until `stop`; the /proc walk runs in a worker thread."""
        while not self._stopped.is_set():
            started = time.monotonic()
            await anyio.to_thread.run_sync(self.sample)
            with anyio.move_on_after(max(0.0, self.interval - (time.monotonic() - started))):
                await self._stopped.wait()

    def stop(self) -> None:
        """End `run`."""
        self._stopped.set()

    def as_dict(self) -> dict[str, Any]:
        """Peaks and marks in MiB."""
        return {
            "samples": self.samples,
            "interval_s": self.interval,
            "peak_mib": {name: _mib(kib) for name, kib in self.peaks.items()},
            "peak_total_mib": _mib(self.total_peak),
            "marks_mib": {
                label: {**{n: _mib(k) for n, k in sample.items()}, "total": _mib(sum(sample.values()))}
                for label, sample in self.marks.items()
            },
        }
