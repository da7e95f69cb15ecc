"""How long an editor's request waits behind the daemon's own call-graph learning (issue 23).

    python -m bench.index.learning_wait BASE ROOT --pairs 3 --asks 12
    # BASE: a `bench.index.monorepo --size 100k` run's state (OUT/work/monorepo/100k), ROOT its tree

The learner asks pyright about symbols only once every client has been quiet for
`[daemon.search] learn_quiet` seconds, but pyright answers one request at a time and reads no
message while it works: a client that speaks again while a learning request is at pyright
waits for it. This measures what that costs an editor who pauses, then asks.

Per pair, two fresh daemons on copies of BASE's state with the learned call graph forgotten
(learn_speed.prepare), one as shipped (learning) and one with `learn_graph = false`, in
alternating order. In each: `lensmux index ROOT --wait` (nothing changed), the warm-up
searches, `--settle` seconds for pyright to read its workspace, then one editor on the pyright
socket opens tornado's web.py, waits for its diagnostics and, `--asks` times, stays quiet for
`--pause` seconds (longer than learn_quiet, so a learning round begins; with `--pause-max`, a
pause drawn between the two, the same draws on both sides) and asks a hover on
another function's name each time (never one the cache holds). Reported per hover its
latency from request to answer; per side p50 / p95 / max; how many symbols the learning side
learned meanwhile. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import random
import re
import sys
import time
from pathlib import Path
from typing import Any

import anyio
from support.daemon_proc import DaemonProc
from support.lspclient import LspClient

from bench.daemon_launch import BenchDaemonError, bench_daemon, config_text, index_with_cli, socket_path
from bench.index.learn_speed import prepare
from bench.report import machine_lines
from bench.runner import add_common_options, arg_parser, finish, result_header, run_and_save
from bench.search.daemon_search import warm_up
from bench.stats import load_average, percentile

SIDES = ("learning", "not learning")
EDITED = Path("tornado-6.4.2") / "tornado" / "web.py"


def hover_positions(text: str, count: int) -> list[tuple[int, int, str]]:
    """(line, character, name) of `count` function names spread over the file, never the same twice."""
    names = [
        (number, match.start(1), match.group(1))
        for number, line in enumerate(text.splitlines())
        if (match := re.match(r"\s*(?:async\s+)?def\s+(\w+)", line))
    ]
    if len(names) < count:
        raise BenchDaemonError(f"{EDITED} has {len(names)} functions, fewer than --asks {count}")
    step = len(names) / count
    return [names[int(i * step)] for i in range(count)]


async def _editor(daemon: DaemonProc, root: Path, args: argparse.Namespace) -> list[dict[str, Any]]:
    path = root / EDITED
    text = path.read_text(encoding="utf-8")
    asks: list[dict[str, Any]] = []
    async with LspClient.over_unix(socket_path(daemon, "pyright"), name="learning-wait-editor") as editor:
        await editor.initialize(root)
        uri = await editor.open(path, "python", text)
        await editor.wait_notification("textDocument/publishDiagnostics", lambda p: p.get("uri") == uri, timeout=120)
        # The same pauses on both sides, and in every pair: one seed.
        rng = random.Random(args.seed)
        for line, character, name in hover_positions(text, args.asks):
            pause = rng.uniform(args.pause, max(args.pause, args.pause_max or args.pause))
            await anyio.sleep(pause)
            started = time.perf_counter()
            answer = await editor.request(
                "textDocument/hover",
                {"textDocument": {"uri": uri}, "position": {"line": line, "character": character}},
                timeout=120,
            )
            ms = round((time.perf_counter() - started) * 1000, 1)
            asks.append({"name": name, "pause_s": round(pause, 1), "ms": ms, "answered": bool(answer)})
        await editor.close(uri)
    return asks


def one_side(args: argparse.Namespace, side: str, pair: int) -> dict[str, Any]:
    """A fresh daemon on a forgotten copy of BASE, with or without learning, and the editor's hovers."""
    work = args.out / "learning_wait" / f"{pair}-{side.replace(' ', '-')}"
    prepare(args.base, work)
    search: dict[str, Any] = {} if side == "learning" else {"learn_graph": False}
    load = [load_average()]
    with bench_daemon(work, config_text(search=search)) as daemon:
        index_with_cli(daemon, args.root, timeout=1800)
        warm_up(daemon, args.root)
        time.sleep(args.settle)
        asks = anyio.run(_editor, daemon, args.root, args)
        graph = daemon.call("lensmux/indexStatus", {"root": str(args.root)}).get("graph") or {}
    load.append(load_average())
    times = sorted(a["ms"] for a in asks)
    return {
        "side": side,
        "pair": pair,
        "load": load,
        "asks": asks,
        "p50_ms": round(percentile(times, 50), 1),
        "p95_ms": round(percentile(times, 95), 1),
        "max_ms": times[-1],
        "learned": graph.get("learned"),
        "learnable": graph.get("learnable"),
    }


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Alternate the two sides `--pairs` times, the learning side first in odd pairs."""
    started = time.monotonic()
    result = result_header("bench.index.learning_wait", pyright=True)
    result["settings"] = {k: getattr(args, k) for k in ("pairs", "asks", "pause", "pause_max", "seed", "settle")}
    result["root"] = str(args.root)
    runs: list[dict[str, Any]] = []
    for pair in range(1, args.pairs + 1):
        order = SIDES if pair % 2 else SIDES[::-1]
        runs.extend(one_side(args, side, pair) for side in order)
    result["runs"] = runs
    return finish(result, started)


def render(result: dict[str, Any]) -> str:
    """A row per daemon, then the ratio of the sides' p95 and max in each pair."""
    lines = [
        "## An editor's hover after a pause, with and without the daemon learning (issue 23)",
        "",
        f"`{result['command']}`",
        "",
        *machine_lines(result),
        f"- root: {result['root']}; settings: {result['settings']}",
        "",
        "| pair | side | load at start → end | hover p50 / p95 / max ms | every hover ms (the pause before it) "
        "| learned at the end |",
        "| ---: | --- | --- | --- | --- | --- |",
    ]
    for r in result["runs"]:
        every = ", ".join(f"{round(a['ms'])} ({a.get('pause_s', '')} s)" for a in r["asks"])
        lines.append(
            f"| {r['pair']} | {r['side']} | {r['load'][0][0]} → {r['load'][1][0]} | "
            f"{r['p50_ms']} / {r['p95_ms']} / {r['max_ms']} | {every} | {r['learned']} of {r['learnable']} |"
        )
    lines.append("")
    by_pair: dict[int, dict[str, Any]] = {}
    for r in result["runs"]:
        by_pair.setdefault(r["pair"], {})[r["side"]] = r
    for pair, sides in sorted(by_pair.items()):
        on, off = sides.get("learning"), sides.get("not learning")
        if on and off and off["p95_ms"] and off["max_ms"]:
            p95, top = on["p95_ms"] / off["p95_ms"], on["max_ms"] / off["max_ms"]
            lines.append(f"- pair {pair}: learning / not learning, p95 {p95:.2f}x, max {top:.2f}x")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = arg_parser(__doc__)
    parser.add_argument("base", type=Path, help="a monorepo run's daemon state (OUT/work/monorepo/SIZE)")
    parser.add_argument("root", type=Path, help="that run's tree")
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--asks", type=int, default=12, help="hovers per daemon")
    parser.add_argument("--pause", type=float, default=7.0, help="s of quiet before each hover (learn_quiet is 5)")
    parser.add_argument("--pause-max", type=float, default=None, help="pauses drawn uniformly from --pause to this")
    parser.add_argument("--seed", type=int, default=7, help="of the pauses' draw")
    parser.add_argument("--settle", type=float, default=60.0, help="s after the warm-up before the editor starts")
    add_common_options(parser)
    args = parser.parse_args(argv)
    args.root = args.root.resolve()
    return run_and_save(args, "learning_wait", run, render, (BenchDaemonError,))


if __name__ == "__main__":
    sys.exit(main())
