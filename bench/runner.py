"""What every benchmark command shares: its options, logging, the result header, and saving a run.

A benchmark module supplies `run(args) -> result` and `render(result) -> markdown`;
`run_and_save` does the rest the same way for all of them: the output folder,
the typed errors a benchmark may end with (one line on stderr, exit status 1),
`<name>-<time>.json` plus `<name>.json` and `<name>.md` under bench/out/.
"""

from __future__ import annotations

import argparse
import json
import logging
import shlex
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench import CHECKOUT, OUT_DIR
from bench.stats import code_state, load_average, machine, write_atomic


def arg_parser(doc: str | None) -> argparse.ArgumentParser:
    """A parser whose help is the module docstring, as written."""
    return argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)


def add_common_options(parser: argparse.ArgumentParser, out: Path = OUT_DIR) -> None:
    """--out (where results go) and -v (debug logging)."""
    parser.add_argument("--out", type=Path, default=out, help=f"output folder (default {out.relative_to(CHECKOUT)})")
    parser.add_argument("-v", "--verbose", action="store_true")


def start_logging(verbose: bool = False) -> None:
    """Timestamped log lines on stderr; the results go to stdout."""
    logging.basicConfig(level=logging.DEBUG if verbose else logging.INFO, format="%(asctime)s %(name)s: %(message)s")


def command_line(module: str) -> str:
    """The command that reproduces this run, for the report."""
    return shlex.join([".venv/bin/python", "-m", module, *sys.argv[1:]])


def result_header(module: str, *, clangd: str | None = None, pyright: bool = False) -> dict[str, Any]:
    """The command, start time, code state and machine every result begins with."""
    return {
        "command": command_line(module),
        "started": time.strftime("%Y-%m-%d %H:%M:%S %z"),
        "code": code_state(CHECKOUT),
        "machine": machine(clangd, pyright=pyright),
    }


def finish(result: dict[str, Any], started: float) -> dict[str, Any]:
    """Record the elapsed time (since `started`, a time.monotonic()) and the load at the end."""
    result["elapsed_s"] = round(time.monotonic() - started, 1)
    result["machine"]["load_avg_at_end"] = load_average()
    return result


def save_result(out_dir: Path, name: str, result: Any, markdown: str | None = None) -> Path:
    """`name-<time>.json`, `name.json` (the latest run) and, with markdown, `name.md`; returns name.json."""
    out_dir.mkdir(parents=True, exist_ok=True)
    text = json.dumps(result, indent=1) + "\n"
    stamp = time.strftime("%Y%m%d-%H%M%S")
    for file_name in (f"{name}-{stamp}.json", f"{name}.json"):
        write_atomic(out_dir / file_name, text)
    if markdown is not None:
        write_atomic(out_dir / f"{name}.md", markdown.rstrip("\n") + "\n")
    return out_dir / f"{name}.json"


def run_and_save(
    args: argparse.Namespace,
    name: str,
    run: Callable[[argparse.Namespace], dict[str, Any]],
    render: Callable[[dict[str, Any]], str],
    errors: tuple[type[Exception], ...],
) -> int:
    """Run a benchmark with parsed `args` (having --out and -v), save and print its result; the exit status."""
    start_logging(args.verbose)
    args.out = args.out.resolve()
    args.out.mkdir(parents=True, exist_ok=True)
    try:
        result = run(args)
    except errors as exc:
        print(f"{name}: {exc}", file=sys.stderr)
        return 1
    markdown = render(result)
    save_result(args.out, name, result, markdown)
    print(markdown)
    return 0
