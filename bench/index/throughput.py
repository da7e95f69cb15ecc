"""The semantic-index benchmark: (a) raw model ceiling, (b) lensmux end to end, (c) hnswlib, (d) daemon RSS.

    python -m bench.index.throughput --corpus rich --rounds 2
    python -m bench.index.throughput --corpus requests --rounds 1 --queries 100   # a quick look

Each round indexes a fresh copy of the corpus through a real daemon (b, d),
reads the chunks back from that index and embeds them with bare onnxruntime
(a), so the two figures of a round are measured minutes apart under the same
machine load; b/a is reported per round and as the median over rounds.
(c) runs on the vectors of the last (a) pass. Results go to
bench/out/bench_index-<corpus>.json (and a time-stamped copy); a Markdown
summary is printed.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench import CHECKOUT
from bench import OUT_DIR as RESULTS
from bench.daemon_launch import BenchDaemonError
from bench.fetch_corpus import CorpusError
from bench.index.corpus import CORPORA, OUT_DIR, fetch, fresh_copy
from bench.index.daemon_indexing import build_model
from bench.index.daemon_indexing import run as run_daemon
from bench.index.hnsw_search import run as run_hnsw
from bench.index.raw_model import Settings, load_chunks, measure, sweep
from bench.runner import arg_parser, result_header, save_result
from bench.stats import load_average

# Written last when a baseline tree is complete, so a half-extracted one is redone.
_BASELINE_DONE = ".extracted"


class BaselineRefUnknown(Exception):
    """--baseline does not name a commit of this checkout."""


def baseline_tree(ref: str) -> Path:
    """lensmux as of git `ref`, laid out as an import tree for PYTHONPATH (read from git, no checkout).

    The editable install finds `lensmux.*` through a meta-path finder that comes after
    sys.path, so a daemon started with PYTHONPATH=<tree> runs this code instead.
    """
    git = ["git", "-C", str(CHECKOUT)]
    sha = subprocess.run(
        [*git, "rev-parse", "--short", "--verify", "--quiet", f"{ref}^{{commit}}"], capture_output=True, text=True
    ).stdout.strip()
    if not re.fullmatch(r"[0-9a-f]{4,40}", sha):
        raise BaselineRefUnknown(f"{ref!r} is not a commit")
    tree = OUT_DIR / "baseline" / sha
    if (tree / _BASELINE_DONE).is_file():
        return tree
    shutil.rmtree(tree, ignore_errors=True)
    (tree / "lensmux").mkdir(parents=True)
    archive = subprocess.run(
        [*git, "archive", sha, "daemon", "adapters", "graph", "lsp-configs"], capture_output=True, check=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(tree / "lensmux")], input=archive, check=True)
    (tree / "lensmux" / "lsp-configs").rename(tree / "lensmux" / "lsp_configs")
    (tree / _BASELINE_DONE).touch()
    return tree


def _lensmux_run(corpus: str, label: str, extra_env: dict[str, str] | None = None) -> dict[str, Any]:
    _, root = fresh_copy(corpus, label)
    load = load_average()
    b = run_daemon(root, OUT_DIR / "work" / label, extra_env=extra_env)
    b["load_avg_before"] = load
    return b


def _round(
    corpus: str, number: int, settings: Settings | None, baseline: Path | None
) -> tuple[dict[str, Any], Settings, Any]:
    b = _lensmux_run(corpus, f"round{number}")
    texts = load_chunks(Path(b["store_dir"]) / "index.sqlite")
    if len(texts) != b["chunks"]:
        raise RuntimeError(f"read {len(texts)} chunks back, the daemon reported {b['chunks']}")
    if settings is None:
        settings = sweep(texts)
    load_a = load_average()
    a, vectors = measure(texts, settings)
    a["load_avg_before"] = load_a
    lensmux_cpu = b["daemon_cpu_s"] + b["server_cpu_s"]
    ratios = {
        "chunks_per_s": round(b["chunks_per_s"] / a["chunks_per_s"], 3),
        # Work per chunk, whatever the share of the cores the run got: raw model CPU
        # against the daemon's own CPU, and against the daemon plus its language server.
        "cpu_daemon": round((b["chunks"] / b["daemon_cpu_s"]) / a["chunks_per_cpu_s"], 3),
        "cpu_daemon_and_server": round((b["chunks"] / lensmux_cpu) / a["chunks_per_cpu_s"], 3),
    }
    result = {"round": number, "raw": a, "lensmux": b, "b_over_a": ratios}
    if baseline is not None:
        base = _lensmux_run(corpus, f"round{number}-baseline", {"PYTHONPATH": str(baseline)})
        result["baseline"] = base
        result["baseline_over_a"] = {"chunks_per_s": round(base["chunks_per_s"] / a["chunks_per_s"], 3)}
    return result, settings, vectors


def main(argv: list[str] | None = None) -> int:
    """Run every part and write the JSON report."""
    parser = arg_parser(__doc__)
    parser.add_argument("--corpus", default="rich", choices=sorted(CORPORA))
    parser.add_argument("--rounds", type=int, default=2, help="interleaved (b, a) rounds (default 2)")
    parser.add_argument("--queries", type=int, default=1000, help="hnswlib queries (default 1000)")
    parser.add_argument("--baseline", metavar="GIT_REF", help="also run lensmux as of this commit in each round")
    args = parser.parse_args(argv)
    try:
        report = run(args)
    except (CorpusError, BenchDaemonError, BaselineRefUnknown) as exc:
        print(f"bench.index.throughput: {exc}", file=sys.stderr)
        return 1
    save_result(RESULTS, f"bench_index-{args.corpus}", report)
    print(summary(report))
    return 0


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Every round, then hnswlib on the last round's vectors; the whole report."""
    started = time.time()
    report: dict[str, Any] = result_header("bench.index.throughput", pyright=True)
    report["load_avg_at_start"] = load_average()
    report["model_build_s"] = round(build_model(), 2)
    sdist, _ = fetch(args.corpus)
    report["corpus"] = {"name": args.corpus, "sdist": sdist.description}
    rounds: list[dict[str, Any]] = []
    settings: Settings | None = None
    vectors: Any = None
    baseline = baseline_tree(args.baseline) if args.baseline else None
    if baseline is not None:
        report["baseline"] = {"ref": args.baseline, "tree": str(baseline)}
    for number in range(1, args.rounds + 1):
        result, settings, vectors = _round(args.corpus, number, settings, baseline)
        rounds.append(result)
        print(f"round {number}: {json.dumps(result['b_over_a'])}", file=sys.stderr, flush=True)
    assert settings is not None
    report["raw_sweep"] = settings.sweep
    report["rounds"] = rounds
    report["b_over_a_median"] = {
        key: round(statistics.median(r["b_over_a"][key] for r in rounds), 3) for key in rounds[0]["b_over_a"]
    }
    report["hnsw"] = run_hnsw(vectors, queries=args.queries)
    report["load_avg_at_end"] = load_average()
    report["duration_s"] = round(time.time() - started, 1)
    return report


def summary(report: dict[str, Any]) -> str:
    """The Markdown figures of a report."""
    lines = [
        f"corpus: {report['corpus']['sdist']}",
        "",
        "| round | raw chunks/s | lensmux chunks/s | files/s | b/a | b/a CPU (daemon) | b/a CPU (+server) | load |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in report["rounds"]:
        a, b, q = r["raw"], r["lensmux"], r["b_over_a"]
        lines.append(
            f"| {r['round']} | {a['chunks_per_s']} | {b['chunks_per_s']} | {b['files_per_s']} | "
            f"{q['chunks_per_s']} | {q['cpu_daemon']} | {q['cpu_daemon_and_server']} | "
            f"{b['load_avg_before'][0]} / {a['load_avg_before'][0]} |"
        )
    lines.append(f"median b/a: {json.dumps(report['b_over_a_median'])}")
    for r in report["rounds"]:
        if "baseline" in r:
            base = r["baseline"]
            lines.append(
                f"round {r['round']} baseline {report['baseline']['ref']}: {base['chunks_per_s']} chunks/s, "
                f"b/a {r['baseline_over_a']['chunks_per_s']}, RSS after indexing "
                f"{round(base['rss_kib']['after_indexing'] / 1024, 1)} MiB, load {base['load_avg_before'][0]}"
            )
    rss = report["rounds"][-1]["lensmux"]["rss_kib"]
    lines.append(f"daemon RSS (MiB): {json.dumps({k: round(v / 1024, 1) for k, v in rss.items()})}")
    for name in ("self", "held_out"):
        part = report["hnsw"][name]
        lines.append(f"hnsw {name} (n={part['graph_size']}, brute force p50 {part['brute_force_p50_us']} us):")
        lines.extend(f"  ef {e['ef']}: p50 {e['p50_us']} us, recall@10 {e['recall_at_10']}" for e in part["by_ef"])
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
