"""A monorepo of 100k, 300k or 1M lines of Python, C and C++, the whole path a user takes through it.

    python -m bench.index.monorepo --size 100k      # then 300k, then 1m (~15-25 min of indexing CPU)

The tree is pinned PyPI sdists side by side in one git checkout (bench/index/monorepo_tree.py).
One benchmark daemon (private XDG directories, the shared model cache, warnings-only log), then:

1. the first search: `lensmux search QUERY --json --root MONOREPO` run from tornado's package directory
   inside the fresh checkout, as a user who just cloned it would; it starts indexing with that directory
   first (without --root the command would index tornado's sdist alone, the nearest project marker).
   Timed from the command's start; useful when an answer is a file under that directory;
2. indexing goes on to the end: the daemon's own run clock, chunks/s overall and per fifth of the
   run, the daemon's CPU, its RSS (peak while indexing, settled after, model loaded) and the
   language servers' (peak of the daemon's children; after, the memory watch's figure per
   instance), the index's size on disk;
3. call-graph learning while nothing else happens, for at most --learn-budget seconds;
4. warm searches (`lensmux/hybridSearch` as the CLI asks it, top_k 10): p50 and p95;
5. an edit (bench/index/freshness.py's three routes) and then a second editor (clangd, on
   brotli's encoder) holding its file while an agent (Serena-like, through the `lensmux client
   pyright` bridge) asks its questions (bench/index/monorepo_session.py);
6. after the daemon stops, the ceiling: bare onnxruntime (bench/index/raw_model.py, its sweep)
   on an evenly spaced sample of the index's own chunk texts.

The load average is recorded at every step: times on a shared machine move with it, RSS and disk
do not. Results go to bench/out/monorepo-<size>.json and .md.
"""

from __future__ import annotations

import argparse
import collections
import json
import logging
import shutil
import sqlite3
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from support.daemon_proc import LENSMUX, DaemonProc

from bench.daemon_launch import BenchDaemonError
from bench.fetch_corpus import CorpusError
from bench.index.daemon_indexing import Sampler, bench_daemon, build_model, cpu_seconds, rss_kib
from bench.index.monorepo_session import instances, run_users
from bench.index.monorepo_tree import SIZES, Tree, build
from bench.index.raw_model import load_chunks, measure, sweep
from bench.runner import add_common_options, arg_parser, finish, result_header, run_and_save
from bench.search.daemon_search import run_queries, warm_up
from bench.stats import load_average, percentile, write_atomic

# Asked from tornado's package directory; the answer is in tornado/httputil.py.
FIRST_QUERY = "parse the headers of an HTTP request"
FOCUS = "tornado"
# One question per project of the largest size and a few that fit any: the same list at every size.
WARM_QUERIES = (
    "compress a buffer with a sliding window",
    "decode a yaml scalar token",
    "read the list of running processes",
    "render a table to the terminal",
    "open a memory mapped database transaction",
    "compile a template to python code",
    "parse command line options and arguments",
    "validate attribute values on a class",
    "evaluate a jsonnet expression",
    "register a route for a url",
    "retry a request after a redirect",
    "resolve a dns name asynchronously",
    "tokenize text into sentence pieces",
    "resize an image with a resampling filter",
    "stream decompression of a zstd frame",
    "create a secure channel to a grpc server",
    "schedule a callback on the event loop",
    "websocket handshake",
    "convert a value to bytes",
    "close the connection on timeout",
    "hash table lookup with linear probing",
    "read a file into memory",
    "encode an integer as variable length",
    "serialize a message to json",
    "load configuration from environment variables",
    "handle an error and log it",
    "iterate over the items of a dictionary",
    "free the memory of a buffer",
    "compute a checksum of the data",
    "wait for a thread to finish",
)
WINDOWS = 5
RAW_SAMPLE = 1200


log = logging.getLogger(__name__)


class MonorepoRunFailed(BenchDaemonError):
    """A step of the user's path did not complete."""


def _mib(kib: int) -> float:
    return round(kib / 1024, 1)


def _settled_rss_kib(pid: int) -> int:
    time.sleep(1.0)
    return rss_kib(pid)


def first_search(daemon: DaemonProc, tree: Tree) -> dict[str, Any]:
    """`lensmux search` from the focus directory of a root never indexed: time to its answer, and is it useful."""
    focus = tree.directory(FOCUS) / FOCUS
    # --root: without it the command takes the nearest project marker above its directory
    # (daemon/cli/connect/project_root.py), tornado's own setup.py, and indexes that sub-project alone.
    argv = [
        LENSMUX,
        "search",
        FIRST_QUERY,
        "--json",
        "--root",
        str(tree.root),
        "--runtime-dir",
        str(daemon.runtime_dir),
    ]
    load = load_average()
    started = time.perf_counter()
    done = subprocess.run(argv, cwd=focus, env=daemon.env, capture_output=True, text=True, timeout=3600, check=False)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise MonorepoRunFailed(f"lensmux search failed ({done.returncode}): {done.stderr[-2000:]}")
    answer = json.loads(done.stdout)
    paths = [tree.root / s["file_path"] for s in answer["ranked_symbols"]]
    useful = [rank for rank, path in enumerate(paths, 1) if path.is_relative_to(focus)]
    return {
        "query": FIRST_QUERY,
        "cwd": focus.relative_to(tree.root).as_posix(),
        "wall_s": round(wall, 2),
        "coverage": answer.get("coverage"),
        "useful": bool(useful),
        "first_useful_rank": useful[0] if useful else None,
        "answers": [p.relative_to(tree.root).as_posix() for p in paths],
        "stderr": done.stderr.strip().splitlines()[-3:],
        "load": load,
    }


def wait_indexed(
    daemon: DaemonProc, root: Path, timeout: float, on_progress: Callable[[dict[str, Any]], None]
) -> dict[str, Any]:
    """The root's status once its run has finished; `on_progress` gets the status every minute until then."""
    deadline = time.monotonic() + timeout
    reported = time.monotonic()
    while True:
        status: dict[str, Any] = daemon.call("lensmux/indexStatus", {"root": str(root)}, timeout=30)
        if not status["running"] and status.get("finished_at"):
            break
        if time.monotonic() > deadline:
            raise MonorepoRunFailed(f"indexing {root} did not finish within {timeout} s")
        if time.monotonic() - reported > 60:
            on_progress(status)
            reported = time.monotonic()
        # Seldom: the sampler asks every second already, and on a 1M-line index every indexStatus
        # counts the learnable symbols on the daemon's event loop (tens of ms).
        time.sleep(5.0)
    if status.get("error"):
        raise MonorepoRunFailed(f"indexing {root} ended with an error: {status['error']}")
    return status


def windows(timeline: list[tuple[float, int, int, float, float]], started: float, ended: float) -> list[float]:
    """Chunks/s in each fifth of the run (sampler seconds), from the progress timeline."""
    if not timeline:
        return []
    span = (ended - started) / WINDOWS
    rates = []
    for number in range(WINDOWS):
        low, high = started + number * span, started + (number + 1) * span
        inside = [(t, chunks) for t, _, chunks, _, _ in timeline if low <= t <= high]
        if len(inside) >= 2:
            rates.append(round((inside[-1][1] - inside[0][1]) / (inside[-1][0] - inside[0][0]), 1))
    return rates


def disk_bytes(store_dir: Path) -> int:
    """Bytes of every file of the index (SQLite, its WAL, the vector file)."""
    return sum(p.stat().st_size for p in store_dir.rglob("*") if p.is_file())


def chunks_by_language(database: Path) -> dict[str, int]:
    """Chunks per file language, read from the finished index."""
    conn = sqlite3.connect(f"file:{database}?mode=ro", uri=True)
    try:
        query = "SELECT f.language, count(*) FROM chunks c JOIN files f ON c.file_id = f.id GROUP BY f.language"
        return {language: count for language, count in conn.execute(query)}
    finally:
        conn.close()


def learn(daemon: DaemonProc, root: Path, budget: float) -> dict[str, Any]:
    """The learner's progress while nothing else asks the servers, until up to date or `budget` s."""
    load = load_average()
    started = time.perf_counter()
    samples: list[dict[str, Any]] = []
    while True:
        graph = daemon.call("lensmux/indexStatus", {"root": str(root)}).get("graph") or {}
        elapsed = round(time.perf_counter() - started, 1)
        samples.append({"s": elapsed, **graph})
        if graph.get("state") == "up to date" or elapsed > budget:
            break
        time.sleep(5.0)
    last = samples[-1]
    return {
        "budget_s": budget,
        "up_to_date_s": last["s"] if last.get("state") == "up to date" else None,
        "learned": last.get("learned"),
        "learnable": last.get("learnable"),
        "learned_per_s": round((last.get("learned") or 0) / max(last["s"], 1e-9), 2),
        "samples": samples[:: max(1, len(samples) // 20)],
        "load": load,
    }


def warm_searches(daemon: DaemonProc, root: Path) -> dict[str, Any]:
    """The warm-up queries, then every warm query once: wall-clock latency as the client sees it."""
    load = load_average()
    warm_up(daemon, root)
    records = run_queries(daemon, root, WARM_QUERIES)
    walls = sorted(r.wall_ms for r in records)
    return {
        "n": len(records),
        "p50_ms": round(percentile(walls, 50), 1),
        "p95_ms": round(percentile(walls, 95), 1),
        "max_ms": walls[-1],
        "execution_p50_ms": round(statistics.median(r.execution_ms for r in records), 1),
        "degraded": sum(r.degraded for r in records),
        # What the answers said went wrong (a degraded answer names the server that did not answer).
        "warnings": dict(collections.Counter(w for r in records for w in r.warnings).most_common(8)),
        "stage_p50_ms": {
            key: round(statistics.median(r.timing.get(key, 0.0) for r in records), 1) for key in records[0].timing
        },
        "load": load,
        "load_after": load_average(),
    }


def index_figures(status: dict[str, Any], sampler: Sampler, cpu_s: float, daemon: DaemonProc) -> dict[str, Any]:
    """What the run did, from the daemon's status and the sampler."""
    run_s = float(status["finished_at"]) - float(status["started_at"])
    chunks = int(status["chunks"])
    rates = windows(sampler.timeline, sampler.timeline[0][0] if sampler.timeline else 0.0, sampler.timeline[-1][0])
    store = Path(status["store_dir"])
    disk = disk_bytes(store)
    return {
        "files": status["files"],
        "symbols": status["symbols"],
        "chunks": chunks,
        "vectors": status["vectors"],
        "run_s": round(run_s, 1),
        "chunks_per_s": round(chunks / run_s, 1),
        "chunks_per_s_by_fifth": rates,
        "daemon_cpu_s": round(cpu_s, 1),
        "servers_cpu_s": round(sampler.children_cpu_s(), 1),
        "daemon_rss_peak_mib": _mib(sampler.peak_daemon_kib),
        "servers_rss_peak_mib": _mib(sampler.peak_children_kib),
        "disk_bytes": disk,
        "disk_kib_per_chunk": round(disk / 1024 / max(chunks, 1), 2),
        "store_dir": str(store),
        "timeline": sampler.timeline[:: max(1, len(sampler.timeline) // 200)],
    }


def ceiling(database: Path) -> dict[str, Any]:
    """Bare onnxruntime on an evenly spaced sample of the index's chunk texts (the sweep's best settings)."""
    texts = load_chunks(database)
    sample = texts[:: max(1, len(texts) // RAW_SAMPLE)][:RAW_SAMPLE]
    load = load_average()
    settings = sweep(sample)
    figures, _ = measure(sample, settings)
    return {**figures, "load": load, "sweep": settings.sweep}


def _checkpoint(args: argparse.Namespace, result: dict[str, Any]) -> None:
    """What is measured so far, in case a later step fails (the index run alone can take an hour)."""
    write_atomic(args.out / f"monorepo-{args.size}.partial.json", json.dumps(result, indent=1) + "\n")


def _step(args: argparse.Namespace, result: dict[str, Any], name: str, step: Callable[[], dict[str, Any]]) -> None:
    """One step after indexing; its failure is recorded, and the steps after it still run."""
    try:
        result[name] = step()
    except Exception as exc:
        log.exception("step %s failed", name)
        result.setdefault("failed_steps", {})[name] = f"{type(exc).__name__}: {exc}"
    _checkpoint(args, result)


def run(args: argparse.Namespace) -> dict[str, Any]:
    """The whole path for one size."""
    started = time.monotonic()
    result = result_header("bench.index.monorepo", clangd=str(Path(LENSMUX).parent / "clangd"), pyright=True)
    result["size"] = args.size
    result["load_at_start"] = load_average()
    result["model_build_s"] = round(build_model(), 2)
    tree = build(args.size, f"monorepo-{args.size}")
    result["tree"] = tree.describe()
    work = args.out / "work" / "monorepo" / args.size
    shutil.rmtree(work, ignore_errors=True)
    with bench_daemon(work) as daemon:
        pid = daemon.pid
        result["daemon_rss_idle_mib"] = _mib(_settled_rss_kib(pid))
        cpu_before = cpu_seconds(pid)
        with Sampler(daemon, tree.root, interval=1.0).running() as sampler:
            result["first_search"] = first_search(daemon, tree)
            _checkpoint(args, result)

            def so_far(status: dict[str, Any]) -> None:
                # Where the run is, should the time box end it before it finishes.
                result["index_so_far"] = {
                    **{k: status.get(k) for k in ("files", "chunks", "coverage", "elapsed_s", "store_dir")},
                    "daemon_cpu_s": round(cpu_seconds(pid) - cpu_before, 1),
                    "servers_cpu_s": round(sampler.children_cpu_s(), 1),
                    "daemon_rss_peak_mib": _mib(sampler.peak_daemon_kib),
                    "servers_rss_peak_mib": _mib(sampler.peak_children_kib),
                    "disk_bytes": disk_bytes(Path(status["store_dir"])),
                    "load": load_average(),
                    "timeline": sampler.timeline[:: max(1, len(sampler.timeline) // 200)],
                }
                _checkpoint(args, result)

            status = wait_indexed(daemon, tree.root, args.index_timeout, so_far)
            cpu_s = cpu_seconds(pid) - cpu_before
        result["load_after_index"] = load_average()
        result["index"] = index_figures(status, sampler, cpu_s, daemon)
        result["daemon_rss_after_index_mib"] = _mib(_settled_rss_kib(pid))
        result["servers_after_index"] = instances(daemon)
        _checkpoint(args, result)
        _step(args, result, "learning", lambda: learn(daemon, tree.root, args.learn_budget))
        _step(args, result, "search", lambda: warm_searches(daemon, tree.root))
        _step(args, result, "users", lambda: run_users(daemon, tree, args))
        result.update(result.pop("users", {}))
        result["daemon_rss_end_mib"] = _mib(_settled_rss_kib(pid))
        result["servers_end"] = instances(daemon)
        result["model"] = daemon.call("lensmux/indexStatus", {"root": str(tree.root)}).get("model")
    database = Path(result["index"]["store_dir"]) / "index.sqlite"
    result["index"]["chunks_by_language"] = chunks_by_language(database)
    result["ceiling"] = ceiling(database)
    index, raw = result["index"], result["ceiling"]
    result["b_over_a"] = {
        "chunks_per_s": round(index["chunks_per_s"] / raw["chunks_per_s"], 3),
        "by_fifth": [round(r / raw["chunks_per_s"], 3) for r in index["chunks_per_s_by_fifth"]],
        "cpu_daemon": round(index["chunks"] / index["daemon_cpu_s"] / raw["chunks_per_cpu_s"], 3),
    }
    return finish(result, started)


def _cell(value: Callable[[], str]) -> str:
    # A step that failed left its figures out: its cells say so instead of failing the report.
    try:
        return value()
    except (KeyError, TypeError, IndexError, ZeroDivisionError):
        return "-"


def render(result: dict[str, Any]) -> str:
    """The run's figures as Markdown lines."""
    r = result
    tree, index = r["tree"], r["index"]
    lines = tree["code_lines"]
    rows: list[tuple[str, Callable[[], str]]] = [
        ("lines (Python, C, C++) / all walked", lambda: f"{lines:,} / {tree['all_lines']:,}"),
        ("files / symbols / chunks", lambda: f"{index['files']:,} / {index['symbols']:,} / {index['chunks']:,}"),
        ("chunks by language", lambda: json.dumps(index["chunks_by_language"])),
        ("first useful search s (rank, coverage)", lambda: f"{r['first_search']['wall_s']} "
         f"({r['first_search']['first_useful_rank']}, {r['first_search']['coverage']}); "
         f"load {r['first_search']['load'][0]}"),
        ("index run s / chunks/s", lambda: f"{index['run_s']} / {index['chunks_per_s']}; "
         f"load after {r['load_after_index'][0]}"),
        ("chunks/s per fifth of the run", lambda: ", ".join(map(str, index["chunks_per_s_by_fifth"]))),
        ("ceiling chunks/s (raw, sample)", lambda: f"{r['ceiling']['chunks_per_s']}; load {r['ceiling']['load'][0]}"),
        ("b/a wall / by fifth / CPU", lambda: f"{r['b_over_a']['chunks_per_s']} / "
         f"{', '.join(map(str, r['b_over_a']['by_fifth']))} / {r['b_over_a']['cpu_daemon']}"),
        ("daemon CPU s / servers CPU s", lambda: f"{index['daemon_cpu_s']} / {index['servers_cpu_s']}"),
        ("daemon RSS idle / peak / after index / end MiB", lambda: f"{r['daemon_rss_idle_mib']} / "
         f"{index['daemon_rss_peak_mib']} / {r['daemon_rss_after_index_mib']} / {r['daemon_rss_end_mib']}"),
        ("servers RSS peak while indexing MiB", lambda: str(index["servers_rss_peak_mib"])),
        ("disk MiB, KiB per chunk", lambda: f"{round(index['disk_bytes'] / 2**20, 1)} / {index['disk_kib_per_chunk']}"),
        ("per 1k lines: run s / daemon CPU s / disk KiB", lambda: f"{round(index['run_s'] * 1000 / lines, 3)} / "
         f"{round(index['daemon_cpu_s'] * 1000 / lines, 3)} / {round(index['disk_bytes'] / 1024 * 1000 / lines, 1)}"),
        ("learning: learned / learnable in s", lambda: f"{r['learning']['learned']} / {r['learning']['learnable']} "
         f"in {r['learning']['samples'][-1]['s']} (up to date: {r['learning']['up_to_date_s']})"),
        ("warm search p50 / p95 / max ms", lambda: f"{r['search']['p50_ms']} / {r['search']['p95_ms']} / "
         f"{r['search']['max_ms']}; load {r['search']['load'][0]}"),
        ("freshness p50 / max s per route", lambda: "; ".join(
            f"{route} {f['p50_s']} / {f['max_s']} (n {f['n']}, load {f['load'][0]})"
            for route, f in r["freshness"]["routes"].items())),
        ("agent ready s / complete s", lambda: f"{r['editor_and_agent']['agent']['ready_s']} / "
         + json.dumps({k: v["complete_s"] for k, v in r["editor_and_agent"]["agent"]["questions"].items()})),
        ("second editor (clangd) ms", lambda: json.dumps([a["ms"] for a in r["editor_and_agent"]["editor"]["asks"]])),
        ("servers after index / end MiB (recycles, restarts)", lambda: "; ".join(
            f"{i['server']} {i['memory_mb']} / "
            + ", ".join(f"{e['memory_mb']} ({e['recycles']}, {e['restarts']})"
                        for e in r["servers_end"] if e["server"] == i["server"])
            for i in r["servers_after_index"])),
        ("failed steps", lambda: json.dumps(r.get("failed_steps", {}))),
    ]  # fmt: skip
    out = [f"monorepo {r['size']}: `{r['command']}`, started {r['started']}", "", "| | |", "| --- | --- |"]
    out += [f"| {name} | {_cell(value)} |" for name, value in rows]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    """Parse, run, save."""
    parser = arg_parser(__doc__)
    parser.add_argument("--size", choices=sorted(SIZES), default="100k")
    parser.add_argument("--learn-budget", type=float, default=180.0, help="seconds of learning at most (180)")
    parser.add_argument("--fresh-trials", type=int, default=3, help="edits per freshness route (3)")
    parser.add_argument("--agent-deadline", type=float, default=300.0, help="seconds the agent may take (300)")
    parser.add_argument("--index-timeout", type=float, default=7200.0)
    add_common_options(parser)
    args = parser.parse_args(argv)
    errors = (CorpusError, BenchDaemonError, subprocess.CalledProcessError)
    return run_and_save(args, f"monorepo-{args.size}", run, render, errors)


if __name__ == "__main__":
    sys.exit(main())
