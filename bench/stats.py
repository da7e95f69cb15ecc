"""Latency summaries, process counters, the machine and code description every report carries, atomic output."""

from __future__ import annotations

import hashlib
import os
import platform
import re
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

# The folders whose code a benchmark measures (the daemon, its adapters, the search library).
CODE_FOLDERS = ("daemon", "adapters", "graph")


def percentile(sorted_values: Sequence[float], q: float) -> float:
    """The q-th percentile (0-100) of already sorted values, linearly interpolated."""
    if not sorted_values:
        raise ValueError("percentile of no values")
    rank = (len(sorted_values) - 1) * q / 100.0
    low = int(rank)
    high = min(low + 1, len(sorted_values) - 1)
    return sorted_values[low] + (sorted_values[high] - sorted_values[low]) * (rank - low)


@dataclass(frozen=True, slots=True)
class Summary:
    """Distribution of one series of latencies, in microseconds."""

    n: int
    p50_us: float
    p90_us: float
    p99_us: float
    mean_us: float
    min_us: float
    max_us: float

    @classmethod
    def of_ns(cls, samples_ns: Sequence[int]) -> Summary:
        """Summarise nanosecond samples."""
        values = sorted(s / 1000.0 for s in samples_ns)
        return cls(
            n=len(values),
            p50_us=percentile(values, 50),
            p90_us=percentile(values, 90),
            p99_us=percentile(values, 99),
            mean_us=sum(values) / len(values),
            min_us=values[0],
            max_us=values[-1],
        )

    def as_dict(self) -> dict[str, float]:
        """Rounded for JSON."""
        return {k: v if k == "n" else round(float(v), 1) for k, v in asdict(self).items()}


@dataclass(frozen=True, slots=True)
class Added:
    """What a path adds over the baseline: differences of percentiles and their ratios."""

    p50_us: float
    p99_us: float
    p50_ratio: float
    p99_ratio: float
    paired_median_us: float

    @classmethod
    def between(cls, base: Summary, other: Summary, paired_median_us: float) -> Added:
        """`other` relative to `base`; the paired median compares requests sent back to back."""
        return cls(
            p50_us=other.p50_us - base.p50_us,
            p99_us=other.p99_us - base.p99_us,
            p50_ratio=other.p50_us / base.p50_us if base.p50_us else float("nan"),
            p99_ratio=other.p99_us / base.p99_us if base.p99_us else float("nan"),
            paired_median_us=paired_median_us,
        )

    def as_dict(self) -> dict[str, float]:
        """Rounded for JSON."""
        return {
            "p50_us": round(self.p50_us, 1),
            "p99_us": round(self.p99_us, 1),
            "p50_ratio": round(self.p50_ratio, 3),
            "p99_ratio": round(self.p99_ratio, 3),
            "paired_median_us": round(self.paired_median_us, 1),
        }


def paired_median_us(base_ns: Sequence[int], other_ns: Sequence[int]) -> float:
    """Median of per-request differences between two series sent pairwise, in microseconds."""
    diffs = sorted((o - b) / 1000.0 for b, o in zip(base_ns, other_ns, strict=True))
    return percentile(diffs, 50)


def _run(argv: Sequence[str]) -> str:
    try:
        return subprocess.run(list(argv), capture_output=True, text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"


def _cpu_model() -> str:
    match = re.search(r"^Model name:\s*(.+)$", _run(["lscpu"]), re.MULTILINE)
    return match.group(1).strip() if match else platform.processor() or "unknown"


def _ram_gib() -> float:
    try:
        text = Path("/proc/meminfo").read_text()
    except OSError:
        return float("nan")
    match = re.search(r"^MemTotal:\s*(\d+) kB", text, re.MULTILINE)
    return round(int(match.group(1)) / (1024 * 1024), 1) if match else float("nan")


def clangd_version(clangd: str) -> str:
    """First line of `clangd --version`."""
    return _run([clangd, "--version"]).splitlines()[0] if clangd else "not installed"


def pyright_version() -> str:
    """`pyright --version` of the venv's pyright (the one the daemon starts)."""
    lines = _run([str(Path(sys.executable).parent / "pyright"), "--version"]).splitlines()
    return lines[-1] if lines else "unknown"


def machine(clangd: str | None = None, *, pyright: bool = False) -> dict[str, Any]:
    """What the figures were measured on; `clangd` (a path) and `pyright` add those servers' versions."""
    info: dict[str, Any] = {
        # The cores this process may run on, which is what a benchmark gets.
        "nproc": len(os.sched_getaffinity(0)),
        "cpu": _cpu_model(),
        "ram_gib": _ram_gib(),
        "kernel": platform.release(),
        "python": sys.version.split()[0],
        "load_avg_at_start": load_average(),
    }
    if clangd is not None:
        info["clangd"] = clangd_version(clangd)
    if pyright:
        info["pyright"] = pyright_version()
    return info


def load_average() -> list[float]:
    """The 1, 5 and 15 minute load averages, rounded."""
    return [round(x, 2) for x in os.getloadavg()]


def code_state(checkout: Path) -> dict[str, Any]:
    """Which lensmux code was measured: the commit, uncommitted files, and a hash of the sources as run."""
    digest = hashlib.sha256()
    for path in sorted(p for folder in CODE_FOLDERS for p in checkout.glob(f"{folder}/**/*.py")):
        digest.update(str(path.relative_to(checkout)).encode() + b"\0" + path.read_bytes())
    git = ["git", "-C", str(checkout)]
    changed = _run([*git, "status", "--porcelain", "--", *CODE_FOLDERS]).splitlines()
    return {
        "commit": _run([*git, "rev-parse", "--short", "HEAD"]),
        "uncommitted": sorted(line.split(maxsplit=1)[-1] for line in changed if line.strip()),
        "sources_sha256": digest.hexdigest()[:16],
    }


def process_cpu_seconds(pid: int, *, gone: float | None = None) -> float:
    """User plus system CPU time a process (not its children) has used so far.

    A process that has exited raises OSError, or reads as `gone` when that is given.
    """
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        if gone is None:
            raise
        return gone
    ticks = os.sysconf("SC_CLK_TCK")
    # Fields 14 and 15 of stat (utime, stime), counted after the ")" of the name.
    return (int(fields[11]) + int(fields[12])) / ticks


def group_cpu_seconds(pgid: int) -> float:
    """User plus system CPU time used so far by the live processes of group `pgid` (a server and its workers)."""
    ticks = os.sysconf("SC_CLK_TCK")
    total = 0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # ended while we looked
        # After the ")" of the name: pgrp is field 5, utime and stime fields 14 and 15.
        if int(fields[2]) == pgid:
            total += int(fields[11]) + int(fields[12])
    return total / ticks


def group_rss_kib(pgid: int) -> int:
    """Resident memory (VmRSS) of the live processes of group `pgid` (a server and its workers), in KiB."""
    total = 0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            if int(stat.read_text().rsplit(")", 1)[1].split()[2]) == pgid:
                total += memory_kib(int(stat.parent.name))
        except (OSError, IndexError, ValueError):
            continue  # ended while we looked
    return total


def memory_kib(pid: int, field: str = "VmRSS") -> int:
    """One memory line of /proc/PID/status (VmRSS, VmHWM, ...) in KiB; 0 once the process is gone."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(f"{field}:"):
                return int(line.split()[1])
    except OSError:
        return 0
    return 0


def memory_mib(pid: int) -> dict[str, float]:
    """A process's lifetime peak (VmHWM) and current resident memory (VmRSS), in MiB."""
    return {field: round(memory_kib(pid, field) / 1024, 1) for field in ("VmHWM", "VmRSS")}


def process_counters(pid: int) -> dict[str, float]:
    """CPU seconds, context switches and minor page faults of a live process so far."""
    stat = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    status = Path(f"/proc/{pid}/status").read_text()
    switches = sum(int(m) for m in re.findall(r"^(?:non)?voluntary_ctxt_switches:\s*(\d+)", status, re.MULTILINE))
    return {
        "cpu_s": process_cpu_seconds(pid),
        "context_switches": float(switches),
        # Field 10 of stat (minflt), counted after the ")" of the name.
        "minor_faults": float(stat[7]),
    }


def write_atomic(path: Path, text: str) -> None:
    """Replace `path` with `text` so a reader never sees a half-written report."""
    with tempfile.NamedTemporaryFile("w", dir=path.parent, prefix=f".{path.name}.", delete=False) as tmp:
        tmp.write(text)
        tmp.flush()
        os.fsync(tmp.fileno())
    os.replace(tmp.name, path)
    fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
