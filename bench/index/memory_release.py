"""What the daemon holds after indexing, with the model loaded and once it has been released.

    python -m bench.index.memory_release                      # rich + requests + flask (~50k lines)
    python -m bench.index.memory_release --baseline /tmp/old/pkg   # and a daemon of other code, after it

One daemon (`[daemon.memory] model_release_after = --release-after`) indexes a
fresh copy of the projects, one root holding all of them, with `lensmux index
--wait`; its RSS is read idle, right after indexing (model loaded), and once
the model has been unused for longer than the release delay (the daemon's log
says when it released it). The language servers' memory is reported apart.
"""

from __future__ import annotations

import shutil
import sys
import time
from pathlib import Path
from typing import Any

from support.daemon_proc import DaemonProc, descendants

from bench import OUT_DIR as BENCH_OUT
from bench.daemon_launch import bench_daemon, config_text, index_with_cli
from bench.fetch_corpus import fetch_sdist
from bench.runner import add_common_options, arg_parser, result_header, save_result, start_logging
from bench.search.corpus import PROJECTS
from bench.stats import load_average, memory_kib

OUT_DIR = BENCH_OUT / "index"


def _lines(root: Path) -> int:
    return sum(len(p.read_bytes().splitlines()) for p in root.rglob("*.py"))


def _root(names: list[str], label: str) -> Path:
    """A fresh root holding a copy of each project."""
    root = OUT_DIR / "roots" / label
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    (root / ".git").mkdir()
    for name in names:
        shutil.copytree(fetch_sdist(PROJECTS[name], OUT_DIR), root / name)
    return root


def _mib(pid: int) -> float:
    return round(memory_kib(pid, "VmRSS") / 1024, 1)


def _servers_mib(daemon: DaemonProc) -> float:
    return round(sum(memory_kib(k, "VmRSS") for k in descendants(daemon.pid)) / 1024, 1)


def _measure(daemon: DaemonProc, root: Path, release_after: float, wait_release: bool) -> dict[str, Any]:
    out: dict[str, Any] = {"idle_mib": _mib(daemon.pid)}
    summary, wall = index_with_cli(daemon, root, timeout=3600)
    time.sleep(1.0)
    out.update(
        index_wall_s=round(wall, 1),
        chunks=summary.get("chunks"),
        files=summary.get("files"),
        after_index_mib=_mib(daemon.pid),
        servers_after_index_mib=_servers_mib(daemon),
    )
    if wait_release:
        deadline = time.monotonic() + release_after + 60
        while "released after" not in daemon.log_text() and time.monotonic() < deadline:
            time.sleep(1.0)
        time.sleep(2.0)
        out["released"] = "released after" in daemon.log_text()
        out["after_release_mib"] = _mib(daemon.pid)
        out["model_state"] = daemon.call("lensmux/indexStatus", {"root": str(root)}).get("model")
    return out


def main(argv: list[str] | None = None) -> int:
    """Measure and save."""
    parser = arg_parser(__doc__)
    parser.add_argument("--projects", default="rich,requests,flask")
    parser.add_argument("--release-after", type=float, default=30.0)
    parser.add_argument("--baseline", type=Path, help="PYTHONPATH of other lensmux code, measured after this one")
    add_common_options(parser)
    args = parser.parse_args(argv)
    start_logging(args.verbose)
    names = args.projects.split(",")
    result = result_header("bench.index.memory_release")
    runs: dict[str, Any] = {}
    config = config_text() + f"\n[daemon.memory]\nmodel_release_after = {args.release_after}\n"
    work = args.out.resolve() / "work" / "memory"
    daemons: dict[str, tuple[dict[str, str], str, bool]] = {"lensmux": ({}, config, True)}
    if args.baseline:
        daemons["before"] = ({"PYTHONPATH": str(args.baseline.resolve())}, config_text(), False)
    for label, (env, text, wait_release) in daemons.items():
        root = _root(names, label)
        result["lines"] = _lines(root)
        shutil.rmtree(work / label, ignore_errors=True)
        with bench_daemon(work / label, text, log_level="info", extra_env=env, stop_timeout=120) as daemon:
            runs[label] = _measure(daemon, root, args.release_after, wait_release)
    result["runs"] = runs
    result["machine"]["load_avg_at_end"] = load_average()
    lines = ["| daemon | idle MiB | after indexing MiB | after the model's release MiB | servers MiB | index s |"]
    lines.append("| --- | ---: | ---: | ---: | ---: | ---: |")
    for label, run in runs.items():
        lines.append(
            f"| {label} | {run['idle_mib']} | {run['after_index_mib']} | {run.get('after_release_mib', '-')} "
            f"| {run['servers_after_index_mib']} | {run['index_wall_s']} |"
        )
    report = (
        "\n".join(lines)
        + f"\n\n{result['lines']:,} lines of Python ({args.projects}); `{result['command']}`;"
        + f" load average at the end {', '.join(map(str, result['machine']['load_avg_at_end']))}\n"
    )
    save_result(args.out, "memory_release", result, report)
    print(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
