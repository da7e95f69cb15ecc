"""What the multiplexer costs: clangd latency direct vs through lensmux, and echo throughput.

    .venv/bin/python -m bench.mux.overhead                 # the full run (about 10 minutes)
    .venv/bin/python -m bench.mux.overhead --rounds 20 --clients 1,10 --duration 2   # a quick look

Writes bench/out/mux_overhead-<time>.json, copies it to bench/out/mux_overhead.json
and prints (and saves as bench/out/mux_overhead.md) the markdown tables.
"""

from __future__ import annotations

import argparse
import functools
import os
import sys
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import anyio
from support.daemon_proc import DaemonProc

from bench.daemon_launch import DaemonLaunchFailed, bench_daemon, config_text, socket_path
from bench.fetch_corpus import CorpusError, working_copy
from bench.mux import clangd_latency, echo_throughput
from bench.mux.clangd_latency import LatencyBenchError, RouteSpec
from bench.mux.echo_throughput import ThroughputBenchError
from bench.mux.overhead_report import render
from bench.runner import add_common_options, arg_parser, finish, result_header, run_and_save
from lensmux.adapters.base import find_executable
from lensmux.adapters.spec import ServerConfig
from lensmux.daemon.config import load_config

MODULE = "bench.mux.overhead"


class MuxBenchError(Exception):
    """The benchmark could not be set up."""


def _parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = arg_parser(__doc__)
    parser.add_argument("--rounds", type=int, default=200, help="measured rounds of the clangd queries")
    parser.add_argument("--warmup", type=int, default=5, help="unmeasured rounds first")
    parser.add_argument("--per-file", type=int, default=3, help="function names queried per open file")
    parser.add_argument(
        "--cache",
        choices=("off", "on", "both"),
        default="both",
        help="lensmux response cache for the socket route: off measures the mux itself, on what users get",
    )
    parser.add_argument("--no-bridge", action="store_true", help="skip the `lensmux client` stdio bridge route")
    parser.add_argument("--clients", default="1,10,50", help="comma-separated client counts for throughput")
    parser.add_argument("--trials", type=int, default=3, help="alternating throughput trials per client count")
    parser.add_argument("--duration", type=float, default=5.0, help="seconds measured per throughput trial")
    parser.add_argument("--payload-bytes", type=int, default=0, help="pad echo params to about this size")
    parser.add_argument("--index-quiet", type=float, default=8.0, help="seconds without index progress = indexed")
    parser.add_argument("--skip-latency", action="store_true")
    parser.add_argument("--skip-throughput", action="store_true")
    add_common_options(parser)
    return parser.parse_args(argv)


def _clangd_config(config_path: Path) -> ServerConfig:
    """The clangd definition the daemon runs, so the direct route starts the same command."""
    server = load_config(config_path, explicit=True).servers.get("clangd")
    if server is None:
        raise MuxBenchError("no clangd server in the configuration")
    return server


def _daemon_indexing(daemon: DaemonProc) -> bool:
    return any(i.get("indexing") for i in daemon.instances("clangd"))


def _socket_route(name: str, description: str, daemon: DaemonProc, out: Path) -> RouteSpec:
    """A route through a daemon's clangd socket, on its own copy of the corpus."""
    return RouteSpec(
        name,
        description,
        working_copy(name, out),
        socket=socket_path(daemon, "clangd"),
        indexing=functools.partial(_daemon_indexing, daemon),
    )


def _route_specs(
    args: argparse.Namespace, config_path: Path, plain: DaemonProc, cached: DaemonProc | None
) -> list[RouteSpec]:
    server = _clangd_config(config_path)
    exe = find_executable(server.command)
    if exe is None:
        raise MuxBenchError(f"{server.command} not found (run scripts/install)")
    specs = [
        RouteSpec(
            "direct",
            "clangd over stdio",
            working_copy("direct", args.out),
            argv=[exe, *server.args],
            process_id=os.getpid(),
            initialization_options=server.initialization_options or None,
        )
    ]
    if args.cache in {"off", "both"}:
        specs.append(_socket_route("lensmux", "lensmux socket (cache off)", plain, args.out))
        if not args.no_bridge:
            # Same root as the socket route: this client joins that clangd instance, as a second editor would.
            specs.append(
                RouteSpec(
                    "bridge",
                    "`lensmux client` stdio bridge (cache off)",
                    working_copy("lensmux", args.out),
                    argv=plain.client_argv("clangd"),
                    env=plain.env,
                )
            )
    if cached is not None:
        specs.append(_socket_route("lensmux-cache", "lensmux socket (cache on)", cached, args.out))
    return specs


def _daemon_cpu_per_request(latency: dict[str, Any]) -> dict[str, float]:
    """Daemon CPU time over the measured rounds divided by the requests that went through it."""
    served = {
        "daemon (cache off)": ("lensmux", "bridge"),
        "daemon (cache on)": ("lensmux-cache",),
    }
    out: dict[str, float] = {}
    for daemon, seconds in latency["cpu_s_measured"].items():
        requests = sum(latency["routes"][r]["all"]["n"] for r in served[daemon] if r in latency["routes"])
        if requests:
            out[daemon] = round(1e6 * seconds / requests, 1)
    return out


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Start the daemons, run the benchmarks, return everything measured."""
    started = time.monotonic()
    work = args.out / "work"
    result: dict[str, Any] = {}
    with ExitStack() as stack:
        plain = stack.enter_context(bench_daemon(work / "daemon-plain", config_text(cache=False, echo=True)))
        cached = None
        if args.cache in {"on", "both"} and not args.skip_latency:
            cached = stack.enter_context(bench_daemon(work / "daemon-cache", config_text(cache=True)))
        if not args.skip_latency:
            specs = _route_specs(args, work / "daemon-plain" / "config.toml", plain, cached)
            result = result_header(MODULE, clangd=specs[0].argv[0])
            result["corpus"] = specs[0].corpus.description
            result["latency"] = anyio.run(
                functools.partial(
                    clangd_latency.run,
                    specs,
                    rounds=args.rounds,
                    warmup=args.warmup,
                    per_file=args.per_file,
                    quiet_s=args.index_quiet,
                    index_timeout_s=1800.0,
                    cpu_pids={
                        name: d.pid for name, d in (("daemon (cache off)", plain), ("daemon (cache on)", cached)) if d
                    },
                )
            )
            result["latency"]["daemon_cpu_us_per_request"] = _daemon_cpu_per_request(result["latency"])
            result["latency"]["daemon_instances"] = {
                name: d.instances("clangd") for name, d in (("plain", plain), ("cache", cached)) if d is not None
            }
        else:
            result = result_header(MODULE)
        result["cache"] = args.cache
        if not args.skip_throughput:
            result["throughput"] = anyio.run(
                functools.partial(
                    echo_throughput.run,
                    plain,
                    work / "echo-root",
                    clients=[int(c) for c in args.clients.split(",")],
                    trials=args.trials,
                    warmup_s=1.0,
                    duration_s=args.duration,
                    payload_bytes=args.payload_bytes,
                )
            )
    return finish(result, started)


def main(argv: list[str] | None = None) -> int:
    """Run and save the benchmark."""
    errors = (MuxBenchError, CorpusError, DaemonLaunchFailed, LatencyBenchError, ThroughputBenchError)
    return run_and_save(_parse_args(argv), "mux_overhead", run, render, errors)


if __name__ == "__main__":
    sys.exit(main())
