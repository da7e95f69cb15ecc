"""Call-graph learning speed on an indexed root: symbols learned per second by one daemon.

    python -m bench.index.learn_speed BASE ROOT OUT --budget 60 [--label NAME] [--trace]
    python -m bench.index.learn_speed --compare OUT/A OUT/B     # the learned rows both runs hold

BASE is a benchmark daemon's directory that indexed ROOT (bench/index/index_root.py). Each run
copies BASE's state (index and vector cache) into OUT/NAME, forgets every learned relation in
the copy, starts this venv's daemon on it (the code of another checkout when PYTHONPATH names
a directory whose `lensmux` is a link to that checkout), runs `lensmux index ROOT --wait`
(nothing changed: it only checks the files and opens the index) and then leaves the daemon
alone for `--budget` seconds, sampling the root's learned count every second. Every run starts
from the same rows, so two runs (main and a branch, alternated) ask about the same symbol ids,
and `--compare` checks that the symbols both learned have the same relations, row for row.
The load average is kept with every run.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from support.daemon_proc import LENSMUX, DaemonProc

from bench.daemon_launch import bench_daemon, config_text, copy_state, index_with_cli
from bench.index.monorepo import WARM_QUERIES
from bench.search.daemon_search import run_queries, warm_up
from bench.stats import load_average, percentile


def prepare(base: Path, work: Path) -> Path:
    """OUT/NAME with BASE's state copied and its learned relations forgotten; the index's database."""
    copy_state(base, work)
    databases = sorted((work / "s" / "lensmux" / "roots").glob("monorepo-*/index.sqlite"))
    if len(databases) != 1:
        raise SystemExit(f"expected one monorepo index under {work}, found {databases}")
    conn = sqlite3.connect(databases[0])
    try:
        with conn:
            # Through the triggers, so the kept counts follow (graph/index/sqlite/learned.py).
            conn.execute("DELETE FROM learned_edges")
            conn.execute("DELETE FROM learned")
    finally:
        conn.close()
    return databases[0]


def _pass(daemon: DaemonProc, root: Path) -> dict[str, Any]:
    records = run_queries(daemon, root, WARM_QUERIES)
    walls = sorted(r.wall_ms for r in records)
    return {
        "p50_ms": round(percentile(walls, 50), 1),
        "p95_ms": round(percentile(walls, 95), 1),
        "max_ms": walls[-1],
        "seeds_p50_ms": round(statistics.median(r.timing.get("seeds", 0.0) for r in records), 1),
        "expansion_p50_ms": round(statistics.median(r.timing.get("expansion", 0.0) for r in records), 1),
        "at_budget": sum(any("budget" in w for w in r.warnings) for r in records),
        "degraded": sum(r.degraded for r in records),
        "load": load_average(),
        # In the order asked: a search right after one at the budget may wait for what that one left.
        "each": [[round(r.wall_ms), int(any("budget" in w for w in r.warnings)), int(r.degraded)] for r in records],
    }


def searches(daemon: DaemonProc, root: Path, between: float) -> dict[str, Any]:
    """The monorepo benchmark's warm queries twice, `between` seconds of learning apart.

    The first pass asks live what is not learned; the second shows what the learner did
    with the time between (a branch that learns the searches' symbols first, or id order).
    """
    warm_up(daemon, root)  # the model loads, pyright analyses: not in the first pass
    first = _pass(daemon, root)
    time.sleep(between)
    graph = daemon.call("lensmux/indexStatus", {"root": str(root)}).get("graph") or {}
    return {"first": first, "between_s": between, "learned_then": graph.get("learned"), "second": _pass(daemon, root)}


def run(args: argparse.Namespace) -> dict[str, Any]:
    work = args.out / args.label
    database = prepare(args.base, work)
    extra = {"LENSMUX_LEARN_TRACE": str(work / "trace.jsonl")} if args.trace else None
    search: dict[str, Any] = {"learn_quiet": args.learn_quiet}
    if args.expansion_budget is not None:
        search["expansion_budget"] = args.expansion_budget
    load_before = load_average()
    with bench_daemon(work, config_text(search=search), extra_env=extra) as daemon:
        _, index_s = index_with_cli(daemon, args.root, timeout=1800)
        started = time.perf_counter()
        samples: list[tuple[float, int]] = []
        while True:
            graph = daemon.call("lensmux/indexStatus", {"root": str(args.root)}).get("graph") or {}
            elapsed = time.perf_counter() - started
            samples.append((round(elapsed, 1), int(graph.get("learned") or 0)))
            if graph.get("state") == "up to date" or elapsed >= args.budget:
                break
            time.sleep(1.0)
        searched = searches(daemon, args.root, args.between) if args.searches else None
    first = next((s for s, n in samples if n > 0), None)
    learned = samples[-1][1]
    return {
        "label": args.label,
        "lensmux": LENSMUX,
        "database": str(database),
        "check_s": round(index_s, 1),
        "budget_s": args.budget,
        "expansion_budget_s": args.expansion_budget,
        "learned": learned,
        "learnable": graph.get("learnable"),
        "first_learned_s": first,
        "per_s": round(learned / max(samples[-1][0], 1e-9), 2),
        # From the first learned symbol: the servers' start and the first quiet wait left out.
        "per_s_learning": round(learned / max(samples[-1][0] - first, 1e-9), 2) if first is not None else None,
        "samples": samples[:: max(1, len(samples) // 15)],
        "load": [load_before, load_average()],
        "searches": searched,
    }


def _edges(database: Path) -> dict[int, list[tuple[str, int, int]]]:
    conn = sqlite3.connect(f"file:{database}?mode=ro", uri=True)
    try:
        out: dict[int, list[tuple[str, int, int]]] = {s: [] for (s,) in conn.execute("SELECT symbol_id FROM learned")}
        rows = conn.execute("SELECT subject_id, relation, other_id, rank FROM learned_edges ORDER BY subject_id, rank")
        for subject, relation, other, rank in rows:
            out[subject].append((relation, other, rank))
        return out
    finally:
        conn.close()


def compare(first: Path, second: Path) -> dict[str, Any]:
    """The learned symbols of two runs' indexes: how many both hold and how many of those differ."""
    a, b = (_edges(next((run / "s" / "lensmux" / "roots").glob("monorepo-*/index.sqlite"))) for run in (first, second))
    both = sorted(set(a) & set(b))
    differ = [s for s in both if a[s] != b[s]]
    return {"first": len(a), "second": len(b), "both": len(both), "differ": len(differ), "examples": differ[:10]}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("base", type=Path)
    parser.add_argument("root", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--budget", type=float, default=60.0)
    parser.add_argument("--label", default="run")
    parser.add_argument("--learn-quiet", type=float, default=5.0)
    parser.add_argument("--trace", action="store_true", help="LENSMUX_LEARN_TRACE for an instrumented daemon")
    parser.add_argument("--searches", action="store_true", help="then the warm queries twice, --between s apart")
    parser.add_argument("--between", type=float, default=60.0)
    parser.add_argument("--expansion-budget", type=float, default=None, help="[search] expansion_budget, s")
    if argv[:1] == ["--compare"]:
        print(json.dumps(compare(Path(argv[1]), Path(argv[2]))))
        return 0
    args = parser.parse_args(argv)
    # Relative XDG directories are ignored (the daemon would use the user's own): absolute paths only.
    args.base, args.root, args.out = args.base.resolve(), args.root.resolve(), args.out.resolve()
    result = run(args)
    (args.out / f"{args.label}.json").write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps({k: v for k, v in result.items() if k != "samples"}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
