"""Resilience load and cache benchmark: throughput, latency, cache hits, memory, and lost answers.

    .venv/bin/python -m bench.bench_load_run                    # the full run (about 10 minutes)
    .venv/bin/python -m bench.bench_load_run --clients 10 --requests 100 --clangd-requests 40 --cache-reps 20

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
import functools
import json
import logging
import os
import shlex
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import anyio
from support.daemon_proc import DaemonProc

from bench import CHECKOUT, OUT_DIR, bench_load_clangd, bench_load_echo
from bench.bench_load_report import render
from bench.bench_load_sites import ClangdLoadError
from bench.daemon_launch import ECHO_SERVER, bench_daemon
from bench.fetch_corpus import CorpusError, working_copy
from bench.stats import code_state, machine
from lensmux.adapters.base import find_executable
from lensmux.daemon.config import DaemonConfig

log = logging.getLogger("bench.bench_load_run")


def _toml_string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def load_config_text(*, cache: bool, echo: bool) -> str:
    """Daemon configuration: warnings-only log, cache on or off, optionally the echo server."""
    lines = ["[daemon]", 'log_level = "warning"', "", "[daemon.cache]", f"enabled = {str(cache).lower()}"]
    if "http" in DaemonConfig.__struct_fields__:
        # Two benchmark daemons run at once; only one could have the search API's port.
        lines += ["", "[daemon.http]", "enabled = false"]
    if echo:
        lines += [
            "",
            "[servers.echo]",
            f"command = {_toml_string(sys.executable)}",
            f"args = [{_toml_string(str(ECHO_SERVER))}]",
            'root_markers = [".git"]',
        ]
    return "\n".join(lines) + "\n"


def _parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
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
    parser.add_argument("--out", type=Path, default=OUT_DIR)
    parser.add_argument("-v", "--verbose", action="store_true")
    return parser.parse_args(argv)


def _memory(daemon: DaemonProc) -> dict[str, float]:
    """The daemon's lifetime peak (VmHWM) and current resident memory, in MiB."""
    values: dict[str, float] = {}
    for line in Path(f"/proc/{daemon.pid}/status").read_text().splitlines():
        name, _, rest = line.partition(":")
        if name in {"VmHWM", "VmRSS"}:
            values[name] = round(int(rest.split()[0]) / 1024, 1)
    return values


def _write_atomic(path: Path, text: str) -> None:
    with tempfile.NamedTemporaryFile("w", dir=path.parent, prefix=f".{path.name}.", delete=False) as tmp:
        tmp.write(text)
        tmp.flush()
        os.fsync(tmp.fileno())
    os.replace(tmp.name, path)
    fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _run_echo(args: argparse.Namespace, work: Path) -> dict[str, Any]:
    with ExitStack() as stack:
        cached = stack.enter_context(bench_daemon(work / "echo-cache", load_config_text(cache=True, echo=True)))
        plain = stack.enter_context(bench_daemon(work / "echo-nocache", load_config_text(cache=False, echo=True)))
        result: dict[str, Any] = anyio.run(
            functools.partial(
                bench_load_echo.run,
                {"cache": cached, "nocache": plain},
                work / "echo-root",
                clients=args.clients,
                requests=args.requests,
                bridge_clients_n=args.bridge_clients,
                inflight=args.inflight,
                hot_fraction=args.hot_fraction,
                seed=args.seed,
            )
        )
        result["daemon_memory_mib"] = {"cache": _memory(cached), "nocache": _memory(plain)}
    return result


def _run_clangd(args: argparse.Namespace, work: Path) -> dict[str, Any]:
    with ExitStack() as stack:
        cached = stack.enter_context(bench_daemon(work / "clangd-cache", load_config_text(cache=True, echo=False)))
        plain = stack.enter_context(bench_daemon(work / "clangd-nocache", load_config_text(cache=False, echo=False)))
        result: dict[str, Any] = anyio.run(
            functools.partial(
                bench_load_clangd.run,
                {
                    "cache": (cached, working_copy("load-cache", args.out)),
                    "nocache": (plain, working_copy("load-nocache", args.out)),
                },
                clients=args.clangd_clients,
                requests=args.clangd_requests,
                inflight=args.clangd_inflight,
                edit_every=args.edit_every,
                per_file=args.per_file,
                cache_reps=args.cache_reps,
                index_quiet_s=args.index_quiet,
                seed=args.seed,
            )
        )
        result["daemon_memory_mib"] = {"cache": _memory(cached), "nocache": _memory(plain)}
    return result


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Start the daemons, run both parts, return everything measured."""
    started = time.monotonic()
    work = args.out / "work" / "load"
    clangd = find_executable("clangd")
    result: dict[str, Any] = {
        "command": shlex.join([".venv/bin/python", "-m", "bench.bench_load_run", *sys.argv[1:]]),
        "started": time.strftime("%Y-%m-%d %H:%M:%S %z"),
        "code": code_state(CHECKOUT),
        "machine": machine(clangd if clangd is not None and not args.skip_clangd else None),
    }
    if not args.skip_echo:
        result["echo"] = _run_echo(args, work)
    if not args.skip_clangd:
        result["clangd"] = _run_clangd(args, work)
    result["elapsed_s"] = round(time.monotonic() - started, 1)
    result["machine"]["load_avg_at_end"] = [round(x, 2) for x in os.getloadavg()]
    return result


def main(argv: list[str] | None = None) -> int:
    """Run and save the benchmark."""
    args = _parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO, format="%(asctime)s %(name)s: %(message)s"
    )
    args.out = args.out.resolve()
    args.out.mkdir(parents=True, exist_ok=True)
    try:
        result = run(args)
    except (CorpusError, ClangdLoadError) as exc:
        print(f"bench_load_run: {exc}", file=sys.stderr)
        return 1
    text = json.dumps(result, indent=2)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    for name in (f"bench_load-{stamp}.json", "bench_load.json"):
        _write_atomic(args.out / name, text + "\n")
    markdown = render(result)
    _write_atomic(args.out / "bench_load.md", markdown + "\n")
    print(markdown)
    return 0


if __name__ == "__main__":
    sys.exit(main())
