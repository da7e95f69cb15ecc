"""Index one root through a real daemon with private XDG directories, and nothing else.

    python -m bench.index.index_root ROOT BASE [--seed-cache FILE]

The daemon is this checkout's venv's `lensmux` (run with another checkout's python and
PYTHONPATH to measure that one). `--seed-cache` copies a vector cache file into the
daemon's state directory first, so a second daemon indexes the same tree without
embedding it again: the same chunks and vectors, another store (bench/index/disk_bytes.py
then compares the two indexes on disk).
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from pathlib import Path

from bench.daemon_launch import bench_daemon, config_text, index_with_cli


def _uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True, check=False).stdout.strip()


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("root", type=Path)
    parser.add_argument("base", type=Path, help="the daemon's private directories go here")
    parser.add_argument("--seed-cache", type=Path, help="a vector-cache.sqlite to start from")
    parser.add_argument("--timeout", type=float, default=5400.0)
    args = parser.parse_args(argv)
    if args.seed_cache is not None:
        state = args.base / "s" / "lensmux"
        state.mkdir(parents=True, exist_ok=True)
        for suffix in ("", "-wal", "-shm"):
            source = Path(f"{args.seed_cache}{suffix}")
            if source.exists():
                shutil.copy(source, state / f"vector-cache.sqlite{suffix}")
    print("start:", _uptime(), flush=True)
    with bench_daemon(args.base, config_text()) as daemon:
        summary, wall = index_with_cli(daemon, args.root, timeout=args.timeout)
    print(json.dumps(summary))
    print(f"wall {wall:.1f} s; end: {_uptime()}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
