"""Resilience load and cache benchmark: throughput, latency, cache hits, memory, and lost answers.

    .venv/bin/python -m bench.mux.load                    # the full run (about 10 minutes)
    .venv/bin/python -m bench.mux.load --clients 10 --requests 100 --clangd-requests 40 --cache-reps 20

Part 1 drives the fast echo server with N clients x M requests (through the
daemon's socket, through `lensmux client` bridges, and straight over stdio as
the baseline). Part 2 drives real clangd on a real C project with 10 clients
and a mix of hover, definition, references, documentSymbol and edits, against
a daemon with the response cache and one without; then times one references
request answered from the cache against the same request uncached.

Writes bench/out/bench_load-<time>.json, copies it to bench/out/bench_load.json,
and prints (and saves as bench/out/bench_load.md) the markdown section.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Awaitable, Callable
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import anyio
from support.daemon_proc import DaemonProc

from bench.daemon_launch import DaemonLaunchFailed, bench_daemon, config_text
from bench.fetch_corpus import CorpusError, working_copy
from bench.mux import load_clangd, load_echo
from bench.mux.load_report import render
from bench.mux.load_sites import ClangdLoadError
from bench.runner import add_common_options, arg_parser, finish, result_header, run_and_save
from bench.stats import memory_mib
from lensmux.adapters.base import find_executable

MODULE = "bench.mux.load"


def _parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = arg_parser(__doc__)
    parser.add_argument("--clients", type=int, default=50, help="echo clients")
    parser.add_argument("--requests", type=int, default=1000, help="requests per echo client")
    parser.add_argument("--bridge-clients", type=int, default=5, help="echo clients through `lensmux client` (0: none)")
    parser.add_argument("--inflight", type=int, default=4, help="requests each echo client keeps outstanding")
    parser.add_argument("--hot-fraction", type=float, default=0.1, help="share of echo requests asking shared keys")
    parser.add_argument("--clangd-clients", type=int, default=10)
    parser.add_argument("--clangd-requests", type=int, default=200, help="requests per clangd client")
    parser.add_argument("--clangd-inflight", type=int, default=2, help="requests each clangd client keeps outstanding")
    parser.add_argument("--edit-every", type=int, default=25, help="an editing client edits every N requests")
    parser.add_argument("--per-file", type=int, default=12, help="symbol positions queried per file")
    parser.add_argument("--cache-reps", type=int, default=100, help="timed repetitions per cached/uncached query")
    parser.add_argument("--index-quiet", type=float, default=8.0, help="seconds without index activity = indexed")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--skip-echo", action="store_true")
    parser.add_argument("--skip-clangd", action="store_true")
    add_common_options(parser)
    return parser.parse_args(argv)


def _with_cache_pair(
    work: Path, part: str, *, echo: bool, load: Callable[[dict[str, DaemonProc]], Awaitable[dict[str, Any]]]
) -> dict[str, Any]:
    """Run one part against two daemons, "cache" (what users get) and "nocache" (the baseline)."""
    with ExitStack() as stack:
        daemons = {
            name: stack.enter_context(
                bench_daemon(work / f"{part}-{name}", config_text(cache=name == "cache", echo=echo))
            )
            for name in ("cache", "nocache")
        }
        result = anyio.run(load, daemons)
        result["daemon_memory_mib"] = {name: memory_mib(d.pid) for name, d in daemons.items()}
    return result


def _run_echo(args: argparse.Namespace, work: Path) -> dict[str, Any]:
    async def load(daemons: dict[str, DaemonProc]) -> dict[str, Any]:
        return await load_echo.run(
            daemons,
            work / "echo-root",
            clients=args.clients,
            requests=args.requests,
            bridge_clients_n=args.bridge_clients,
            inflight=args.inflight,
            hot_fraction=args.hot_fraction,
            seed=args.seed,
        )

    return _with_cache_pair(work, "echo", echo=True, load=load)


def _run_clangd(args: argparse.Namespace, work: Path) -> dict[str, Any]:
    async def load(daemons: dict[str, DaemonProc]) -> dict[str, Any]:
        return await load_clangd.run(
            {name: (d, working_copy(f"load-{name}", args.out)) for name, d in daemons.items()},
            clients=args.clangd_clients,
            requests=args.clangd_requests,
            inflight=args.clangd_inflight,
            edit_every=args.edit_every,
            per_file=args.per_file,
            cache_reps=args.cache_reps,
            index_quiet_s=args.index_quiet,
            seed=args.seed,
        )

    return _with_cache_pair(work, "clangd", echo=False, load=load)


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Start the daemons, run both parts, return everything measured."""
    started = time.monotonic()
    work = args.out / "work" / "load"
    clangd = find_executable("clangd")
    result = result_header(MODULE, clangd=clangd if clangd is not None and not args.skip_clangd else None)
    if not args.skip_echo:
        result["echo"] = _run_echo(args, work)
    if not args.skip_clangd:
        result["clangd"] = _run_clangd(args, work)
    return finish(result, started)


def main(argv: list[str] | None = None) -> int:
    """Run and save the benchmark."""
    errors = (CorpusError, ClangdLoadError, DaemonLaunchFailed)
    return run_and_save(_parse_args(argv), "bench_load", run, render, errors)


if __name__ == "__main__":
    sys.exit(main())
