"""The full pipeline through a real daemon: `lensmux serve`, `lensmux index`, `lensmux/hybridSearch`.

The daemon runs with private XDG runtime, state and config directories under
bench/out/search/daemon/<project>/ (the state directory is kept between runs, so
re-running on an unchanged copy only checks the files; the model cache is the
user's, built once by `lensmux model build`). It logs warnings only and has the
HTTP endpoint off, so runs do not collide with other daemons on the machine.

A search is one control-socket request, timed by the client from connect to the
decoded answer: that is the end-to-end latency. The engine's own per-stage timing
comes from the response.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from support.daemon_proc import DaemonProc

from bench.daemon_launch import BenchDaemonError, index_with_cli
from bench.daemon_launch import bench_daemon as launch_daemon
from bench.daemon_launch import config_text as daemon_config_text

__all__ = ["DaemonRunFailed", "SearchRecord", "config_text", "index_root", "run_queries", "search_daemon"]

# Queries unrelated to any docstring: they start pyright's workspace analysis and load
# the model before anything is measured, without warming the cache for measured queries.
WARMUP_QUERIES = (
    "open a connection and send bytes",
    "parse the configuration file",
    "handle an error and log it",
    "iterate over all items in a list",
    "convert a value to a string",
    "close everything on shutdown",
)


class DaemonRunFailed(BenchDaemonError):
    """The benchmark daemon did not answer a search."""


@dataclass(frozen=True, slots=True)
class SearchRecord:
    """One answered search as the evaluation keeps it."""

    query: str
    ranked: list[tuple[str, int]]  # (file path, 0-based start line), best first
    ids: list[str]
    seeds: list[bool]  # per ranked symbol: stage 1 found it (else only expansion did)
    wall_ms: float
    execution_ms: float
    timing: dict[str, float]
    degraded: bool
    warnings: list[str]
    # per ranked symbol: the neighbour fill placed it (graph/search/answer/neighbours.py)
    neighbours: list[bool] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        """JSON form."""
        return {
            "query": self.query,
            "ids": self.ids,
            "seeds": self.seeds,
            "wall_ms": self.wall_ms,
            "execution_ms": self.execution_ms,
            "timing": self.timing,
            "degraded": self.degraded,
            "warnings": self.warnings,
        }


def config_text(search: Mapping[str, Any] | None = None) -> str:
    """The benchmark daemon's configuration, with an optional `[daemon.search]` table."""
    return daemon_config_text(search=search)


def search_daemon(base: Path, config: str) -> AbstractContextManager[DaemonProc]:
    """A daemon with private XDG directories under `base`; stopped (SIGTERM) on exit."""
    return launch_daemon(base, config, stop_timeout=120)


def index_root(daemon: DaemonProc, root: Path) -> dict[str, Any]:
    """`lensmux index ROOT --wait --json`, plus the wall time and the index status."""
    summary, wall = index_with_cli(daemon, root, timeout=7200)
    status: dict[str, Any] = daemon.call("lensmux/indexStatus", {"root": str(root)})
    return {"summary": summary, "status": status, "wall_s": round(wall, 2)}


def wait_learned(daemon: DaemonProc, root: Path, timeout: float = 7200) -> dict[str, Any]:
    """Wait until the daemon has learned the root's call graph; the wall time and the counts."""
    started = time.perf_counter()
    while True:
        status: dict[str, Any] = daemon.call("lensmux/indexStatus", {"root": str(root)})
        graph: dict[str, Any] = status.get("graph") or {}
        if graph.get("state") == "up to date" or time.perf_counter() - started > timeout:
            return {**graph, "wall_s": round(time.perf_counter() - started, 1)}
        time.sleep(2.0)


def search(
    daemon: DaemonProc, root: Path, query: str, overrides: Mapping[str, Any] | None = None, top_k: int = 10
) -> SearchRecord:
    """One `lensmux/hybridSearch` (top_k 10 unless told)."""
    params: dict[str, Any] = {"query": query, "root": str(root), "top_k": top_k}
    if overrides:
        params["config_overrides"] = dict(overrides)
    started = time.perf_counter()
    try:
        response: dict[str, Any] = daemon.call("lensmux/hybridSearch", params, timeout=120)
    except (OSError, RuntimeError) as exc:
        raise DaemonRunFailed(f"search {query!r} failed: {exc}") from exc
    wall = (time.perf_counter() - started) * 1000
    symbols = response["ranked_symbols"]
    return SearchRecord(
        query=query,
        ranked=[(s["file_path"], int(s["range"]["start"]["line"])) for s in symbols],
        ids=[s["id"] for s in symbols],
        seeds=[any(r.startswith(("seed:", "anchor:")) for r in s["reasons"]) for s in symbols],
        neighbours=[any(r.startswith("neighbour:") for r in s["reasons"]) for s in symbols],
        wall_ms=round(wall, 2),
        execution_ms=float(response["execution_time_ms"]),
        timing={k: float(v) for k, v in response["timing"].items()},
        degraded=bool(response["degraded"]),
        warnings=list(response["warnings"])[:4],
    )


def run_queries(
    daemon: DaemonProc, root: Path, queries: Sequence[str], overrides: Mapping[str, Any] | None = None
) -> list[SearchRecord]:
    """Every query once, one after another (nothing else is in flight: latency is per request)."""
    return [search(daemon, root, q, overrides) for q in queries]


def warm_up(daemon: DaemonProc, root: Path) -> list[SearchRecord]:
    """The warm-up queries (model, pyright's workspace analysis, the first expansion)."""
    return run_queries(daemon, root, WARMUP_QUERIES)
