"""Resident memory of named groups of process trees, sampled while agent sessions run.

A group is a set of root pids and everything below them (a pyright of its own is a
wrapper and its node process; the daemon's tree holds its pyright). Every
`interval` seconds the sampler sums VmRSS and Pss over each group's trees; it keeps
each group's peak, the peak of all groups together, and any sample taken on request
(`mark`, for "every session has answered"), for both.

VmRSS counts a page shared between processes (the node or python binary's text, a
library) in each of them: summed over eight pyrights or eight bridges it counts those
pages eight times. Pss (/proc/PID/smaps_rollup) charges each process its share of
such a page, so a sum of Pss over a set of processes is the memory that set holds.
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


def pss_kib(pid: int) -> int:
    """The process's proportional set size (Pss of /proc/PID/smaps_rollup) in KiB; 0 once it is gone."""
    try:
        with open(f"/proc/{pid}/smaps_rollup", "rb") as f:
            for line in f:
                if line.startswith(b"Pss:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        return 0
    return 0


def _tree(roots: set[int], children: dict[int, list[int]]) -> set[int]:
    pids: set[int] = set()
    todo = list(roots)
    while todo:
        pid = todo.pop()
        if pid not in pids:
            pids.add(pid)
            todo.extend(children.get(pid, []))
    return pids


def tree_rss_kib(roots: set[int], children: dict[int, list[int]] | None = None) -> int:
    """VmRSS summed over `roots` and all their descendants (0 for the ones gone)."""
    return sum(memory_kib(pid) for pid in _tree(roots, _children() if children is None else children))


def tree_pss_kib(roots: set[int], children: dict[int, list[int]] | None = None) -> int:
    """Pss summed over `roots` and all their descendants (0 for the ones gone)."""
    return sum(pss_kib(pid) for pid in _tree(roots, _children() if children is None else children))


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
    # The same, of Pss.
    pss_peaks: dict[str, int] = field(default_factory=dict)
    pss_total_peak: int = 0
    pss_marks: dict[str, dict[str, int]] = field(default_factory=dict)
    samples: int = 0
    _stopped: anyio.Event = field(default_factory=anyio.Event)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, group: str, pid: int) -> None:
        """A process whose tree belongs to `group` from now on."""
        with self._lock:
            self.groups.setdefault(group, set()).add(pid)

    def sample(self) -> tuple[dict[str, int], dict[str, int]]:
        """One sample of every group now (KiB of VmRSS, of Pss), folded into the peaks; safe from any thread."""
        with self._lock:
            groups = {name: set(roots) for name, roots in self.groups.items()}
        children = _children()
        trees = {name: _tree(roots, children) for name, roots in groups.items()}
        rss = {name: sum(memory_kib(pid) for pid in pids) for name, pids in trees.items()}
        pss = {name: sum(pss_kib(pid) for pid in pids) for name, pids in trees.items()}
        with self._lock:
            for name in trees:
                self.peaks[name] = max(self.peaks.get(name, 0), rss[name])
                self.pss_peaks[name] = max(self.pss_peaks.get(name, 0), pss[name])
            self.total_peak = max(self.total_peak, sum(rss.values()))
            self.pss_total_peak = max(self.pss_total_peak, sum(pss.values()))
            self.samples += 1
        return rss, pss

    async def mark(self, label: str) -> None:
        """Keep a sample taken now under `label`."""
        self.marks[label], self.pss_marks[label] = await anyio.to_thread.run_sync(self.sample)

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
        """Peaks and marks in MiB: VmRSS under the names earlier runs used, Pss under `pss_*`."""
        return {
            "samples": self.samples,
            "interval_s": self.interval,
            "peak_mib": {name: _mib(kib) for name, kib in self.peaks.items()},
            "peak_total_mib": _mib(self.total_peak),
            "marks_mib": _marks_mib(self.marks),
            "pss_peak_mib": {name: _mib(kib) for name, kib in self.pss_peaks.items()},
            "pss_peak_total_mib": _mib(self.pss_total_peak),
            "pss_marks_mib": _marks_mib(self.pss_marks),
        }


def _marks_mib(marks: dict[str, dict[str, int]]) -> dict[str, dict[str, float]]:
    return {
        label: {**{n: _mib(k) for n, k in sample.items()}, "total": _mib(sum(sample.values()))}
        for label, sample in marks.items()
    }
