"""pyright's resident memory against how many files the daemon's bind walk had it bind (`prebind_max_files`).

    .venv/bin/python -m bench.mux.bind_walk_memory                          # tornado
    .venv/bin/python -m bench.mux.bind_walk_memory --root TREE --caps 150,300,0,450 --rounds 2

Per cap, in the order given, each round: a fresh daemon with `[servers.pyright] prebind_max_files`
set to the cap (0: `prebind = false`, the walk off); an editor initializes the root and opens
`--open` (the first Python file in path order by default), waits for pyright's "Found N source
files", then until `lensmux status` shows the walk `done` or stopped at the cap (the walk off:
`--off-wait` seconds), then 2 s more, and reads the resident memory of pyright's process group.
Reported per run: the cap, the walk's state, the files pyright found, and the memory; and per cap
the memory above the walk-off runs' median, per file bound. Nothing here asserts a size.
"""

from __future__ import annotations

import argparse
import re
import statistics
import time
from pathlib import Path
from typing import Any

import anyio
from support.daemon_proc import DaemonProc, wait_until
from support.lspclient import LspClient

from bench.daemon_launch import bench_daemon, config_text
from bench.mux.agent_questions import tornado
from bench.runner import add_common_options, arg_parser, finish, result_header, run_and_save
from bench.stats import group_rss_kib

MODULE = "bench.mux.bind_walk_memory"
FOUND = re.compile(r"^Found (\d+) source files?")


def _parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = arg_parser(__doc__)
    parser.add_argument("--root", type=Path, help="a Python tree (default: tornado's sdist)")
    parser.add_argument("--open", help="the file the editor opens, relative to the root")
    parser.add_argument("--caps", default="25,50,0,1000000", help="prebind_max_files per run, 0 for the walk off")
    parser.add_argument("--rounds", type=int, default=2, help="how many times the caps are run, in order")
    parser.add_argument("--off-wait", type=float, default=5.0, help="seconds after discovery with the walk off")
    add_common_options(parser)
    return parser.parse_args(argv)


def _found(client: LspClient) -> int | None:
    for params in client.notifications_of("window/logMessage"):
        if isinstance(params, dict) and (found := FOUND.match(str(params.get("message", "")))) is not None:
            return int(found.group(1))
    return None


def _walk_state(daemon: DaemonProc) -> str:
    instances = daemon.instances("pyright")
    return str(instances[0].get("prebind")) if instances else "-"


async def _one(daemon: DaemonProc, root: Path, opened: Path, cap: int, off_wait: float) -> dict[str, Any]:
    async with LspClient.over_process(daemon.client_argv("pyright"), name="editor") as editor:
        await editor.initialize(root)
        await editor.open(opened, "python")
        with anyio.fail_after(120):
            while (found := _found(editor)) is None:
                await anyio.sleep(0.05)
        if cap:
            wait_until(lambda: _walk_state(daemon) == "done" or _walk_state(daemon).endswith("(cap)"), timeout=900)
        else:
            await anyio.sleep(off_wait)
        await anyio.sleep(2.0)
        pid = int(daemon.instances("pyright")[0]["pid"])
        return {"cap": cap, "walk": _walk_state(daemon), "found": found, "rss_mib": group_rss_kib(pid) / 1024}


def run(args: argparse.Namespace) -> dict[str, Any]:
    started = time.monotonic()
    work = args.out / "work" / "bind_walk_memory"
    root = args.root.resolve() if args.root else tornado(work).root
    opened = root / args.open if args.open else min(root.rglob("*.py"))
    caps = [int(c) for c in args.caps.split(",")]
    result = result_header(MODULE, pyright=True)
    result.update({"root": str(root), "opened": str(opened.relative_to(root)), "runs": []})
    for round_ in range(args.rounds):
        for cap in caps:
            pyright = f"prebind_max_files = {cap}" if cap else "prebind = false"
            config = config_text() + f"\n[servers.pyright]\n{pyright}\n"
            with bench_daemon(work / f"daemon-{round_}-{cap}", config) as daemon:
                result["runs"].append(anyio.run(_one, daemon, root, opened, cap, args.off_wait))
    off = [r["rss_mib"] for r in result["runs"] if not r["cap"]]
    result["off_median_mib"] = statistics.median(off) if off else None
    return finish(result, started)


def _bound(run: dict[str, Any]) -> int:
    """How many files the walk had bound when it stopped: k of `k/M files (cap)`, else all it found."""
    head = str(run["walk"]).split("/", 1)[0]
    return int(head) if head.isdigit() else int(run["found"])


def _render(result: dict[str, Any]) -> str:
    off = result["off_median_mib"]
    lines = [
        f"`{result['command']}`",
        "",
        f"root {result['root']}, {result['opened']} open; walk off: median {off or 0:.0f} MiB",
        "",
        "| cap | walk | found | pyright RSS | above off, per file bound |",
        "|---|---|---|---|---|",
    ]
    for run in result["runs"]:
        per_file = ""
        if run["cap"] and off is not None and _bound(run):
            per_file = f"{(run['rss_mib'] - off) / _bound(run):.2f} MiB"
        cap = run["cap"] or "off"
        lines.append(f"| {cap} | {run['walk']} | {run['found']} | {run['rss_mib']:.0f} MiB | {per_file} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    return run_and_save(_parse_args(argv), "bind_walk_memory", run, _render, (OSError,))


if __name__ == "__main__":
    raise SystemExit(main())
