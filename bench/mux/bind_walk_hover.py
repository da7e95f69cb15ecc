"""What a hover sent in the middle of the daemon's bind walk waits, against the same hover at a pyright of its own.

    .venv/bin/python -m bench.mux.bind_walk_hover                 # tornado, 3 pairs
    .venv/bin/python -m bench.mux.bind_walk_hover --pairs 5

Per pair, one after the other:
  1. shared: a fresh daemon (walk on); an editor initializes tornado's root, opens
     tornado/web.py, waits for pyright's "Found N source files", then polls `lensmux status`
     until the walk reports `k/M files` (it has started and not ended), and sends a hover on
     `class RequestHandler`; the walk's state is read again once the answer is in (by another
     status call: the walk may have resumed meanwhile, 0.3 s after the hover);
  2. alone: `pyright-langserver --stdio` of its own, the same steps, the hover sent as long
     after "Found" as it was in (1).
Reported per pair: each hover's wall time, the walk's state before and after, and their ratio.
The walk asks one file at a time, so the shared hover should wait one file's request at most.
Nothing here asserts a time.
"""

from __future__ import annotations

import argparse
import re
import time
from pathlib import Path
from typing import Any

import anyio
from support.daemon_proc import VENV_BIN, DaemonProc
from support.lspclient import LspClient

from bench.daemon_launch import bench_daemon, config_text
from bench.mux.agent_questions import tornado
from bench.runner import add_common_options, arg_parser, finish, result_header, run_and_save

MODULE = "bench.mux.bind_walk_hover"
PYRIGHT = [str(VENV_BIN / "pyright-langserver"), "--stdio"]
MID_WALK = re.compile(r"^(\d+)/(\d+) files$")


def _parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = arg_parser(__doc__)
    parser.add_argument("--pairs", type=int, default=3, help="shared/alone pairs, alternating")
    add_common_options(parser)
    return parser.parse_args(argv)


def _found(client: LspClient) -> bool:
    return any(
        isinstance(p, dict) and str(p.get("message", "")).startswith("Found ")
        for p in client.notifications_of("window/logMessage")
    )


async def _until_found(client: LspClient) -> None:
    with anyio.fail_after(60):
        while not _found(client):
            await anyio.sleep(0.01)


def _hover_params(root: Path) -> dict[str, Any]:
    path = root / "tornado" / "web.py"
    line = next(i for i, text in enumerate(path.read_text().splitlines()) if text.startswith("class RequestHandler"))
    return {"textDocument": {"uri": path.as_uri()}, "position": {"line": line, "character": 6}}


def _walk_state(daemon: DaemonProc) -> str:
    instances = daemon.instances("pyright")
    return str(instances[0].get("prebind")) if instances else "-"


async def _shared(daemon: DaemonProc, root: Path) -> dict[str, Any]:
    async with LspClient.over_process(daemon.client_argv("pyright"), name="editor") as editor:
        await editor.initialize(root)
        await editor.open(root / "tornado" / "web.py", "python")
        await _until_found(editor)
        found = time.perf_counter()
        with anyio.fail_after(120):
            while not ((m := MID_WALK.match(_walk_state(daemon))) and int(m.group(1)) >= 1):
                await anyio.sleep(0.002)
        before = _walk_state(daemon)
        sent = time.perf_counter()
        await editor.request("textDocument/hover", _hover_params(root), timeout=60)
        wall = time.perf_counter() - sent
        return {
            "hover_s": wall,
            "after_found_s": sent - found,
            "walk_before": before,
            "walk_after": _walk_state(daemon),
        }


async def _alone(root: Path, after_found_s: float) -> dict[str, Any]:
    async with LspClient.over_process(PYRIGHT, name="alone") as editor:
        await editor.initialize(root)
        await editor.open(root / "tornado" / "web.py", "python")
        await _until_found(editor)
        await anyio.sleep(after_found_s)
        sent = time.perf_counter()
        await editor.request("textDocument/hover", _hover_params(root), timeout=60)
        return {"hover_s": time.perf_counter() - sent, "after_found_s": after_found_s}


def run(args: argparse.Namespace) -> dict[str, Any]:
    started = time.monotonic()
    work = args.out / "work" / "bind_walk_hover"
    project = tornado(work)
    result = result_header(MODULE)
    result["pairs"] = []
    for n in range(args.pairs):
        with bench_daemon(work / f"daemon-{n}", config_text()) as daemon:
            shared = anyio.run(_shared, daemon, project.root)
        alone = anyio.run(_alone, project.root, shared["after_found_s"])
        result["pairs"].append({"shared": shared, "alone": alone, "ratio": shared["hover_s"] / alone["hover_s"]})
    return finish(result, started)


def _render(result: dict[str, Any]) -> str:
    lines = [
        f"`{result['command']}`",
        "",
        "| pair | shared hover (walk before -> after) | alone hover | ratio |",
        "|---|---|---|---|",
    ]
    for n, pair in enumerate(result["pairs"], 1):
        shared, alone = pair["shared"], pair["alone"]
        lines.append(
            f"| {n} | {shared['hover_s'] * 1000:.0f} ms ({shared['walk_before']} -> {shared['walk_after']}) "
            f"| {alone['hover_s'] * 1000:.0f} ms | {pair['ratio']:.2f} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    return run_and_save(_parse_args(argv), "bind_walk_hover", run, _render, (OSError,))


if __name__ == "__main__":
    raise SystemExit(main())
