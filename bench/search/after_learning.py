"""What an editor's edits cost pyright once the daemon has learned the call graph.

    python -m bench.search.after_learning --edits 10
    python -m bench.search.after_learning --edits 10 --baseline fa12099   # lensmux as of a commit

A real daemon indexes the benchmark's prepared copy of rich (bench/search/corpus.py),
learns its call graph (`learn_graph`, what a warm daemon does while editors are quiet),
then an editor on the pyright socket opens `rich/text.py`, which most of rich imports,
and edits it `--edits` times, `--gap` seconds apart: each edit adds a function. Per edit:
the time until pyright publishes the edited file's diagnostics, a hover's time right
after them, and pyright's CPU over the gap (it re-checks every open file importing the
edited one). Also reported: the documents the daemon holds open at pyright before the
first edit. Output: bench/out/after_learning[-<ref>]-<stamp>.json and .md.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import anyio
from support.daemon_proc import DaemonProc
from support.lsp_framing import LspClientError
from support.lspclient import LspClient

from bench.daemon_launch import BenchDaemonError, bench_daemon, config_text, index_with_cli, server_pids, socket_path
from bench.index.throughput import BaselineRefUnknown, baseline_tree
from bench.report import machine_lines
from bench.runner import add_common_options, arg_parser, finish, result_header, run_and_save
from bench.search.corpus import CorpusError, load_or_prepare
from bench.search.daemon_search import wait_learned
from bench.stats import group_cpu_seconds, load_average

TARGET = "rich/text.py"


def _open_documents(daemon: DaemonProc) -> int:
    return sum(int(i.get("open_documents", 0)) for i in daemon.instances("pyright"))


async def _edits(daemon: DaemonProc, root: Path, args: argparse.Namespace) -> list[dict[str, Any]]:
    """Open the target, edit it `--edits` times; each edit's figures."""
    path = root / TARGET
    text = path.read_text(encoding="utf-8")
    pgid = os.getpgid(server_pids(daemon, "pyright")[0])
    out: list[dict[str, Any]] = []
    async with LspClient.over_unix(socket_path(daemon, "pyright"), name="after-learning-editor") as editor:
        await editor.initialize(root)
        uri = await editor.open(path, "python", text, 1)
        await editor.wait_notification("textDocument/publishDiagnostics", lambda p: p["uri"] == uri, timeout=120)
        await anyio.sleep(args.gap)
        for number in range(args.edits):
            text += f"\n\ndef added_{number}(value: int) -> int:\n    return value + {number}\n"
            since = len(editor.notifications)
            cpu = group_cpu_seconds(pgid)
            started = time.perf_counter()
            await editor.change_full(uri, text, number + 2)
            await editor.wait_notification(
                "textDocument/publishDiagnostics", lambda p: p["uri"] == uri, since=since, timeout=120
            )
            diagnosed = time.perf_counter()
            position = {"line": 0, "character": 1}
            await editor.request("textDocument/hover", {"textDocument": {"uri": uri}, "position": position})
            hovered = time.perf_counter()
            await anyio.sleep(max(0.0, started + args.gap - time.perf_counter()))
            out.append(
                {
                    "diagnostics_ms": round((diagnosed - started) * 1000, 1),
                    "hover_ms": round((hovered - diagnosed) * 1000, 1),
                    "pyright_cpu_s": round(group_cpu_seconds(pgid) - cpu, 3),
                }
            )
    return out


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Index, learn, then edit."""
    started = time.monotonic()
    result = result_header("bench.search.after_learning", pyright=True)
    root = load_or_prepare("rich").root
    env = None
    if args.baseline:
        tree = baseline_tree(args.baseline)
        result["baseline"] = {"ref": args.baseline, "tree": str(tree)}
        env = {"PYTHONPATH": str(tree)}
    work = args.out / "after_learning" / (args.baseline or "current")
    with bench_daemon(work / "daemon", config_text(), extra_env=env, stop_timeout=120) as daemon:
        summary, _wall = index_with_cli(daemon, root, timeout=3600)
        result["index"] = {"files": summary["files"], "chunks": summary["chunks"]}
        result["learned"] = wait_learned(daemon, root)
        time.sleep(args.settle)
        result["open_documents_before"] = _open_documents(daemon)
        result["load_avg_before"] = load_average()
        result["edits"] = anyio.run(_edits, daemon, root, args)
        result["load_avg_after"] = load_average()
        result["open_documents_after"] = _open_documents(daemon)
    edits = result["edits"]
    result["summary"] = {
        key: round(statistics.median(e[key] for e in edits), 3)
        for key in ("diagnostics_ms", "hover_ms", "pyright_cpu_s")
    }
    return finish(result, started)


def render(result: dict[str, Any]) -> str:
    """One line of figures."""
    s = result["summary"]
    code = result["baseline"]["ref"] if "baseline" in result else "current"
    return "\n".join(
        [
            *machine_lines(result),
            "",
            "| code | documents held before edits | diagnostics ms p50 | hover ms p50 "
            "| pyright CPU s per edit p50 | load |",
            "| --- | --- | --- | --- | --- | --- |",
            f"| {code} | {result['open_documents_before']} | {s['diagnostics_ms']} | {s['hover_ms']} | "
            f"{s['pyright_cpu_s']} | {result['load_avg_before'][0]} / {result['load_avg_after'][0]} |",
        ]
    )


def main(argv: list[str] | None = None) -> int:
    """Command line."""
    parser = arg_parser(__doc__)
    parser.add_argument("--edits", type=int, default=10)
    parser.add_argument("--gap", type=float, default=4.0, help="seconds between edits (default 4)")
    parser.add_argument("--settle", type=float, default=10.0, help="seconds after learning before editing")
    parser.add_argument("--baseline", metavar="GIT_REF", help="run lensmux as of this commit instead")
    add_common_options(parser)
    args = parser.parse_args(argv)
    name = "after_learning" + (f"-{args.baseline}" if args.baseline else "")
    return run_and_save(args, name, run, render, (CorpusError, BenchDaemonError, BaselineRefUnknown, LspClientError))


if __name__ == "__main__":
    sys.exit(main())
