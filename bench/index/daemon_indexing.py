"""(b) and (d): a real daemon indexes a real repository; throughput and resident memory.

The daemon is `lensmux serve --foreground` in a subprocess with private XDG
runtime, state and config directories (the model cache, XDG_CACHE_HOME, is
shared, so the model is built once by `lensmux model build` and only loaded
here). The sequence, all in one daemon:

1. idle: RSS of the daemon before anything asks for the model;
2. warm-up: `lensmux index <empty dir> --wait --json` loads the model (timed:
   this is the model load the measured run does not pay), RSS again;
3. the run: `lensmux index ROOT --wait --json` on a fresh copy of the corpus,
   pyright answering documentSymbol through the daemon; files/s and chunks/s
   from the daemon's own run clock (progress started_at..finished_at) and from
   the command's wall time; RSS and CPU of the daemon and of the language
   server sampled during the run;
4. RSS after indexing.
"""

from __future__ import annotations

import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from support.daemon_proc import LENSMUX, DaemonProc, descendants

from bench.daemon_launch import BenchDaemonError, config_text, index_with_cli
from bench.daemon_launch import bench_daemon as launch_daemon
from bench.stats import memory_kib, process_cpu_seconds


class ModelBuildFailed(BenchDaemonError):
    """`lensmux model build` failed."""


def rss_kib(pid: int) -> int:
    """VmRSS of a process, in KiB (0 once it is gone)."""
    return memory_kib(pid, "VmRSS")


def cpu_seconds(pid: int) -> float:
    """User plus system CPU a process (not its children) has used (0 once it is gone)."""
    return process_cpu_seconds(pid, gone=0.0)


@dataclass
class Sampler:
    """Every `interval` s in a thread: RSS of the daemon and its children, and the run's progress."""

    daemon: DaemonProc
    root: Path
    interval: float = 0.25
    peak_daemon_kib: int = 0
    peak_children_kib: int = 0
    # (seconds since sampling began, files done, chunks done, daemon CPU s, children CPU s)
    timeline: list[tuple[float, int, int, float, float]] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _children_cpu: dict[int, float] = field(default_factory=dict)

    def _loop(self) -> None:
        pid = self.daemon.pid
        started = time.perf_counter()
        while not self._stop.wait(self.interval):
            self.peak_daemon_kib = max(self.peak_daemon_kib, rss_kib(pid))
            kids = descendants(pid)
            self.peak_children_kib = max(self.peak_children_kib, sum(rss_kib(k) for k in kids))
            for kid in kids:
                # Remembered per pid because a process's CPU time is gone with it.
                self._children_cpu[kid] = max(self._children_cpu.get(kid, 0.0), cpu_seconds(kid))
            try:
                status = self.daemon.call("lensmux/indexStatus", {"root": str(self.root)}, timeout=5)
            except (OSError, RuntimeError):
                continue  # not registered yet (the model loads first) or a slow answer
            self.timeline.append(
                (
                    round(time.perf_counter() - started, 2),
                    int(status["files_done"]),
                    int(status["chunks_done"]),
                    round(cpu_seconds(pid), 2),
                    round(self.children_cpu_s(), 2),
                )
            )

    @contextmanager
    def running(self) -> Iterator[Sampler]:
        """Sample while the block runs."""
        thread = threading.Thread(target=self._loop, daemon=True)
        thread.start()
        try:
            yield self
        finally:
            self._stop.set()
            thread.join()

    def children_cpu_s(self) -> float:
        """CPU seconds of every child seen (the language server's node and friends)."""
        return sum(self._children_cpu.values())


def bench_daemon(base: Path, extra_env: dict[str, str] | None = None) -> AbstractContextManager[DaemonProc]:
    """A daemon with private XDG dirs, logging warnings only (a line per message would be measured)."""
    return launch_daemon(base, config_text(), extra_env=extra_env, stop_timeout=120)


def _index(daemon: DaemonProc, root: Path) -> tuple[dict[str, Any], float]:
    return index_with_cli(daemon, root, timeout=3600)


def build_model() -> float:
    """`lensmux model build` (a no-op once cached); returns its wall time."""
    started = time.perf_counter()
    done = subprocess.run([LENSMUX, "model", "build"], capture_output=True, text=True, timeout=1800)
    if done.returncode != 0:
        raise ModelBuildFailed(f"lensmux model build failed: {done.stderr[-2000:]}")
    return time.perf_counter() - started


def _settled_rss(pid: int) -> int:
    # Let the allocator return what it will after a burst before reading.
    time.sleep(1.0)
    return rss_kib(pid)


@contextmanager
def _py_spy(pid: int, output: Path | None) -> Iterator[None]:
    """Sample the daemon's Python stacks (collapsed, per thread, idle included) while the block runs."""
    if output is None:
        yield
        return
    spy = Path(LENSMUX).parent / "py-spy"
    argv = [
        str(spy), "record", "--pid", str(pid), "--rate", "100", "--threads", "--idle", "--nonblocking",
        "--format", "raw", "--output", str(output),
    ]  # fmt: skip
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    time.sleep(1.0)  # attached before the run starts
    try:
        yield
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _first_commit(timeline: list[tuple[float, int, int, float, float]]) -> float | None:
    """Seconds from the command's start until the first chunks were committed."""
    return next((t for t, _, chunks, _, _ in timeline if chunks), None)


def run(
    root: Path, work: Path, *, profile: Path | None = None, extra_env: dict[str, str] | None = None
) -> dict[str, Any]:
    """Index `root` through a fresh daemon under `work`; figures for (b) and (d), and the state dir.

    With `profile`, py-spy samples the daemon during the run (which slows it: not for figures);
    `extra_env` goes to the daemon (PYTHONPATH of a baseline lensmux tree, see throughput.py).
    """
    empty = work / "empty-root"
    empty.mkdir(parents=True, exist_ok=True)
    shutil.rmtree(work / "daemon", ignore_errors=True)
    with bench_daemon(work / "daemon", extra_env) as daemon:
        rss_idle = _settled_rss(daemon.pid)
        _, load_wall = _index(daemon, empty)
        rss_model = _settled_rss(daemon.pid)
        cpu_before = cpu_seconds(daemon.pid)
        with _py_spy(daemon.pid, profile), Sampler(daemon, root).running() as sampler:
            summary, wall = _index(daemon, root)
        daemon_cpu = cpu_seconds(daemon.pid) - cpu_before
        status: dict[str, Any] = daemon.call("lensmux/indexStatus", {"root": str(root)})
        rss_indexed = _settled_rss(daemon.pid)
        server_rss = sum(rss_kib(k) for k in descendants(daemon.pid))
        state_home = Path(daemon.env["XDG_STATE_HOME"])
    run_s = float(status["finished_at"]) - float(status["started_at"])
    files, chunks = int(summary["files"]), int(summary["chunks"])
    return {
        "root": str(root),
        "files": files,
        "symbols": int(summary["symbols"]),
        "chunks": chunks,
        "vectors": int(status["vectors"]),
        "run_s": round(run_s, 3),
        "command_wall_s": round(wall, 3),
        "chunks_per_s": round(chunks / run_s, 2),
        "files_per_s": round(files / run_s, 2),
        "chunks_per_s_wall": round(chunks / wall, 2),
        "files_per_s_wall": round(files / wall, 2),
        "model_load_s": round(load_wall, 3),
        "model_load_included": False,
        "daemon_cpu_s": round(daemon_cpu, 2),
        "server_cpu_s": round(sampler.children_cpu_s(), 2),
        "rss_kib": {
            "idle": rss_idle,
            "model_loaded": rss_model,
            "after_indexing": rss_indexed,
            "peak_during_indexing": max(sampler.peak_daemon_kib, rss_indexed),
            "language_servers_after_indexing": server_rss,
            "language_servers_peak": sampler.peak_children_kib,
        },
        "first_commit_s": _first_commit(sampler.timeline),
        "timeline": sampler.timeline,
        "store_dir": str(status["store_dir"]),
        "state_home": str(state_home),
    }
