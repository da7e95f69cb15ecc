"""How soon a change is searchable: an unsaved buffer, a save, a write with no editor.

    python -m bench.index.freshness --corpus rich --trials 20
    python -m bench.index.freshness --corpus requests --trials 5    # a quick look
    python -m bench.index.freshness --corpus rich --baseline 9e17e4e    # the same, lensmux as of a commit
    python -m bench.index.freshness --monorepo 100k --monorepo-out DIR --trials 5 --files 2
        # tornado's files in the tree and index a `bench.index.monorepo --size 100k --out DIR` run left

A real daemon (bench/daemon_launch.py) indexes a fresh copy of the corpus with
`lensmux index --wait`. Then, for each route, `--trials` times: a new function
with a made-up name and a docstring of made-up words is added to one of the
package's largest files, and `lensmux/hybridSearch` (the CLI's call, top_k 10)
is asked for the docstring every `--poll-ms` until the function is among the
answers. The routes:

- buffer: an editor on the daemon's pyright socket sends didChange with the new
  text; nothing is written to disk;
- save: the same editor sends didChange, writes the file and sends didSave at
  once (the save is re-indexed at once; the edit waits for typing to pause);
- disk: the file is written with no editor holding it (only the watcher sees it).

With --monorepo, the daemon starts on a copy of the index state that run left (its
learned call graph as far as it got) and edits tornado's largest files inside the
monorepo's tree, so that a change lands in an index of that size without indexing it
again.

A trial's latency runs from just before the change is sent to the end of the
first search that returns the function (what a user sees); the start of the last
search that missed it is kept as a lower bound. Results go to
bench/out/bench_freshness-<corpus>.json and .md.
"""

from __future__ import annotations

import argparse
import logging
import math
import random
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
from support.daemon_proc import DaemonProc
from support.lspclient import LspClient, path_uri

from bench import OUT_DIR
from bench.daemon_launch import BenchDaemonError, config_text, copy_state, index_with_cli, socket_path
from bench.daemon_launch import bench_daemon as launch_daemon
from bench.fetch_corpus import CorpusError
from bench.index.corpus import CORPORA, fresh_copy
from bench.index.corpus import OUT_DIR as TREES_DIR
from bench.index.throughput import BaselineRefUnknown, baseline_tree
from bench.report import machine_lines
from bench.runner import add_common_options, arg_parser, finish, result_header, run_and_save
from bench.search.daemon_search import warm_up
from bench.stats import load_average, percentile

log = logging.getLogger(__name__)

ROUTES = ("buffer", "save", "disk")
GOAL_S = 1.0
_SYLLABLES = ("vor", "nak", "plim", "grush", "wick", "zen", "tol", "brap", "quil", "mox", "dre", "fen", "sku", "lor")


class FreshnessError(BenchDaemonError):
    """The daemon stopped answering searches."""


@dataclass(frozen=True, slots=True)
class Probe:
    """A function nobody has written before, and the question that should find it."""

    name: str
    query: str
    source: str


@dataclass(frozen=True, slots=True)
class Session:
    """What every trial of a run shares."""

    daemon: DaemonProc
    root: Path
    args: argparse.Namespace
    rng: random.Random


@dataclass
class Document:
    """One target file: its pristine text and the version the editor last sent."""

    path: Path
    pristine: str
    version: int = 1

    @property
    def uri(self) -> str:
        """The file's URI."""
        return path_uri(self.path)


def _word(rng: random.Random) -> str:
    return "".join(rng.choice(_SYLLABLES) for _ in range(3))


def make_probe(rng: random.Random, route: str, number: int) -> Probe:
    """A made-up function name and a docstring of made-up words (plain words: not an anchor)."""
    words = [_word(rng) for _ in range(3)]
    name = f"tally_{words[0]}_{route}_{number}"
    sentence = f"Tally the {words[0]} {words[1]} of the {words[2]} ledger"
    source = (
        f"\n\ndef {name}(values: list[int]) -> int:\n"
        f'    """{sentence}."""\n'
        f"    # {words[1]} entries count {number} times\n"
        "    total = 0\n"
        "    for value in values:\n"
        f"        total += value * {number + 2}\n"
        "    return total\n"
    )
    return Probe(name, sentence.lower(), source)


def target_files(root: Path, count: int) -> list[Path]:
    """The package's `count` largest Python files (tests, docs and examples left out): the slowest to re-read."""
    skipped = {"tests", "test", "docs", "examples", "benchmarks", "tools"}
    files = [p for p in root.rglob("*.py") if not skipped & set(p.relative_to(root).parts) and ".git" not in p.parts]
    return sorted(files, key=lambda p: (-p.stat().st_size, str(p)))[:count]


def _search_names(daemon: DaemonProc, root: Path, query: str) -> tuple[list[str], list[list[str]]]:
    params = {"query": query, "root": str(root), "top_k": 10}
    try:
        response: dict[str, Any] = daemon.call("lensmux/hybridSearch", params, timeout=120)
    except (OSError, RuntimeError) as exc:
        raise FreshnessError(f"search {query!r} failed: {exc}") from exc
    symbols = response["ranked_symbols"]
    return [s["name"] for s in symbols], [list(s["reasons"]) for s in symbols]


async def _until_found(session: Session, probe: Probe, started: float) -> dict[str, Any]:
    """Search every --poll-ms until the probe is answered; the trial's figures."""
    poll_s, timeout_s = session.args.poll_ms / 1000, session.args.timeout
    searches, last_miss = 0, None
    while True:
        asked = time.perf_counter()
        names, reasons = await anyio.to_thread.run_sync(_search_names, session.daemon, session.root, probe.query)
        answered = time.perf_counter()
        searches += 1
        if probe.name in names:
            rank = names.index(probe.name)
            return {
                "name": probe.name,
                "found_s": round(answered - started, 3),
                "last_miss_start_s": None if last_miss is None else round(last_miss - started, 3),
                "hit_search_ms": round((answered - asked) * 1000, 1),
                "searches": searches,
                "rank": rank + 1,
                "reasons": reasons[rank],
            }
        last_miss = asked
        if answered - started > timeout_s:
            log.warning("%s not searchable %s s after the change", probe.name, timeout_s)
            return {"name": probe.name, "found_s": None, "searches": searches, "last_miss_start_s": None}
        await anyio.sleep(max(0.0, asked + poll_s - time.perf_counter()))


async def _save(editor: LspClient, doc: Document, text: str) -> None:
    """What an editor does when the user saves: sync the buffer, write it, say so."""
    doc.version += 1
    await editor.change_full(doc.uri, text, doc.version)
    await anyio.Path(doc.path).write_text(text, encoding="utf-8")
    await editor.notify("textDocument/didSave", {"textDocument": {"uri": doc.uri}})


async def _route(
    route: str, docs: list[Document], change: Callable[[Document, str], Awaitable[None]], session: Session
) -> dict[str, Any]:
    """`trials` changes through one route, each timed until searchable."""
    args = session.args
    load = load_average()
    trials: list[dict[str, Any]] = []
    for number in range(args.trials):
        doc = docs[number % len(docs)]
        probe = make_probe(session.rng, route, number)
        started = time.perf_counter()
        await change(doc, doc.pristine + probe.source)
        trial = await _until_found(session, probe, started)
        trial["file"] = doc.path.relative_to(session.root).as_posix()
        trials.append(trial)
        log.info("%s %d: %s s (%s)", route, number, trial["found_s"], trial["file"])
        await anyio.sleep(args.settle)
    return {"route": route, "load_avg_before": load, "load_avg_after": load_average(), "trials": trials}


async def _buffer_change(editor: LspClient, doc: Document, text: str) -> None:
    doc.version += 1
    await editor.change_full(doc.uri, text, doc.version)


async def _disk_change(doc: Document, text: str) -> None:
    await anyio.Path(doc.path).write_text(text, encoding="utf-8")


async def _all_routes(daemon: DaemonProc, root: Path, files: list[Path], args: argparse.Namespace) -> list[Any]:
    session = Session(daemon, root, args, random.Random(args.seed))
    docs = [Document(p, p.read_text(encoding="utf-8")) for p in files]
    results: list[Any] = []
    async with LspClient.over_unix(socket_path(daemon, "pyright"), name="freshness-editor") as editor:
        await editor.initialize(root)
        for doc in docs:
            await editor.open(doc.path, "python", doc.pristine, doc.version)
        if "buffer" in args.routes:
            results.append(await _route("buffer", docs, lambda d, t: _buffer_change(editor, d, t), session))
        if "save" in args.routes:
            results.append(await _route("save", docs, lambda d, t: _save(editor, d, t), session))
        for doc in docs:
            await _save(editor, doc, doc.pristine)
            await editor.close(doc.uri)
        await anyio.sleep(args.settle)
    if "disk" in args.routes:
        results.append(await _route("disk", docs, _disk_change, session))
        for doc in docs:
            await _disk_change(doc, doc.pristine)
    return results


def summarize(trials: list[dict[str, Any]]) -> dict[str, Any]:
    """p50, p95 and max of the trials' latencies, and how many missed the goal."""
    # A trial that never became searchable counts as taking forever.
    found = sorted(math.inf if t["found_s"] is None else t["found_s"] for t in trials)
    hits = sorted(t["hit_search_ms"] for t in trials if t["found_s"] is not None)
    return {
        "n": len(found),
        "p50_s": _finite(percentile(found, 50)),
        "p95_s": _finite(percentile(found, 95)),
        "max_s": _finite(found[-1]),
        "over_goal": sum(1 for f in found if f > GOAL_S),
        "never_found": sum(1 for t in trials if t["found_s"] is None),
        "hit_search_ms_p50": round(percentile(hits, 50), 1) if hits else None,
    }


def _finite(seconds: float) -> float | None:
    """None where a never-found trial decides the figure."""
    return round(seconds, 3) if math.isfinite(seconds) else None


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Index the corpus in a fresh daemon, then time every route."""
    started = time.monotonic()
    result = result_header("bench.index.freshness", pyright=True)
    if args.monorepo:
        work = args.out / "freshness" / f"monorepo-{args.monorepo}"
        root = _kept_monorepo(args.monorepo, args.monorepo_out, work / "daemon")
        files = target_files(root / "tornado-6.4.2", args.files)
        description = f"the {args.monorepo} monorepo's tree and kept index ({root})"
    else:
        sdist, root = fresh_copy(args.corpus, "freshness")
        files = target_files(root, args.files)
        work, description = args.out / "freshness" / args.corpus, sdist.description
    result["corpus"] = {
        "name": f"monorepo-{args.monorepo}" if args.monorepo else args.corpus,
        "sdist": description,
        "files": [f.name for f in files],
    }
    env = None
    if args.baseline:
        # As in throughput.py: the daemon runs lensmux as of that commit.
        tree = baseline_tree(args.baseline)
        result["baseline"] = {"ref": args.baseline, "tree": str(tree)}
        env = {"PYTHONPATH": str(tree)}
    config = config_text()
    with launch_daemon(work / "daemon", config, log_level=args.daemon_log, extra_env=env, stop_timeout=120) as daemon:
        summary, wall = index_with_cli(daemon, root, timeout=3600)
        result["index"] = {"files": summary["files"], "chunks": summary["chunks"], "wall_s": round(wall, 1)}
        warm_up(daemon, root)
        if args.monorepo:
            # pyright reads and indexes a tree this size for tens of seconds after it starts (37 s
            # at 100k; the monorepo run's learner had minutes): an edit before then times its start.
            time.sleep(args.monorepo_quiet)
        routes = anyio.run(_all_routes, daemon, root, files, args)
    for route in routes:
        route["summary"] = summarize(route["trials"])
    result["routes"] = routes
    result["settings"] = {
        "trials": args.trials,
        "poll_ms": args.poll_ms,
        "settle_s": args.settle,
        "timeout_s": args.timeout,
        "seed": args.seed,
    }
    return finish(result, started)


def _kept_monorepo(size: str, run_out: Path, daemon_base: Path) -> Path:
    """The monorepo tree of `size`; its run's index state (under run_out) copied to daemon_base."""
    root = TREES_DIR / "roots" / f"monorepo-{size}" / "monorepo"  # where monorepo_tree.build puts it
    state = run_out / "work" / "monorepo" / size
    if not (root / ".git").is_dir() or not (state / "s").is_dir():
        raise FreshnessError(f"no kept {size} monorepo: run bench.index.monorepo --size {size} --out {run_out} first")
    copy_state(state, daemon_base)
    return root


def render(result: dict[str, Any]) -> str:
    """The Markdown table of a run."""
    index = result["corpus"], result["index"]
    code = f"lensmux as of {result['baseline']['ref']}; " if "baseline" in result else ""
    lines = [
        f"{code}corpus: {index[0]['sdist']} ({index[1]['files']} files, {index[1]['chunks']} chunks), "
        f"edited files: {', '.join(index[0]['files'])}",
        *machine_lines(result),
        "",
        f"| route | trials | p50 s | p95 s | max s | over {GOAL_S:g} s | never found | search ms p50 | load |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for route in result["routes"]:
        s = route["summary"]
        load = f"{route['load_avg_before'][0]} / {route['load_avg_after'][0]}"
        never = f"over {result['settings']['timeout_s']:g} s"
        lines.append(
            f"| {route['route']} | {s['n']} | {s['p50_s'] or never} | {s['p95_s'] or never} | {s['max_s'] or never} | "
            f"{s['over_goal']} | "
            f"{s['never_found']} | {s['hit_search_ms_p50']} | {load} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Parse the options, run, save bench_freshness-<corpus>.json."""
    parser = arg_parser(__doc__)
    parser.add_argument("--corpus", default="rich", choices=sorted(CORPORA))
    parser.add_argument("--trials", type=int, default=20, help="changes per route (default 20)")
    parser.add_argument("--routes", nargs="+", default=list(ROUTES), choices=ROUTES)
    parser.add_argument("--files", type=int, default=4, help="edit the N largest package files in turn (default 4)")
    parser.add_argument("--poll-ms", type=float, default=20, help="search interval (default 20 ms)")
    parser.add_argument("--settle", type=float, default=2.0, help="pause between trials, s (default 2)")
    parser.add_argument(
        "--timeout", type=float, default=15, help="a trial not searchable after this long, s, is never found"
    )
    parser.add_argument("--seed", type=int, default=14)
    parser.add_argument(
        "--daemon-log", default="warning", help="the daemon's log level (debug slows it: not for figures)"
    )
    parser.add_argument("--baseline", metavar="GIT_REF", help="run lensmux as of this commit instead (before/after)")
    parser.add_argument("--monorepo", choices=("100k", "300k", "1m"), help="edit a kept monorepo index instead")
    parser.add_argument(
        "--monorepo-out", type=Path, default=OUT_DIR, help="the --out of the bench.index.monorepo run it kept"
    )
    parser.add_argument("--monorepo-quiet", type=float, default=60, help="s between warm-up and the first edit (60)")
    add_common_options(parser, OUT_DIR)
    args = parser.parse_args(argv)
    corpus = f"monorepo-{args.monorepo}" if args.monorepo else args.corpus
    name = f"bench_freshness-{corpus}" + (f"-{args.baseline}" if args.baseline else "")
    return run_and_save(args, name, run, render, (CorpusError, BenchDaemonError, BaselineRefUnknown))


if __name__ == "__main__":
    sys.exit(main())
