"""Index the benchmark projects once through a real daemon and remember where each index is.

Every offline step (quality.py, crossval.py, ablate.py, the CoSQA script) reads the
index a daemon built, in process, after the daemon stopped: one daemon per project
(private XDG directories under bench/out/search/daemon/<project>/), `lensmux index
--wait`, then stop. Re-running on an unchanged copy only checks the files.

    python -m bench.search.index_set click psutil     # prints each index's summary

Output: bench/out/search/index-<project>.json (the store directory, the index summary).
"""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path
from typing import Any

from bench.daemon_launch import BenchDaemonError
from bench.runner import arg_parser
from bench.search.corpus import OUT_DIR, CorpusError, load_or_prepare
from bench.search.daemon_search import config_text, index_root, search_daemon

log = logging.getLogger(__name__)

__all__ = ["index_at", "indexed"]


def _key(name: str, label: str) -> str:
    return f"{name}-{label}" if label else name


def index_at(name: str, root: Path, label: str = "") -> dict[str, Any]:
    """Index `root` with a daemon of its own under daemon/<name>[-<label>]; the saved record.

    A label keeps a second index of the same tree (another chunking, say) beside the first.
    """
    key = _key(name, label)
    with search_daemon(OUT_DIR / "daemon" / key, config_text()) as daemon:
        done = index_root(daemon, root.resolve())
    record = {"project": name, "root": str(root.resolve()), "store_dir": done["status"]["store_dir"]} | done
    (OUT_DIR / f"index-{key}.json").write_text(json.dumps(record, indent=1))
    return record


def indexed(name: str, label: str = "") -> tuple[Path, Path]:
    """(store directory, root) of a project's index, indexing it first when there is none."""
    saved = OUT_DIR / f"index-{_key(name, label)}.json"
    try:
        record = json.loads(saved.read_text())
        if Path(record["store_dir"]).is_dir():
            return Path(record["store_dir"]), Path(record["root"])
    except (OSError, ValueError, KeyError):
        pass
    record = index_at(name, load_or_prepare(name).root, label)
    return Path(record["store_dir"]), Path(record["root"])


def main(argv: list[str] | None = None) -> int:
    """(Re-)index the named projects."""
    parser = arg_parser(__doc__)
    parser.add_argument("projects", nargs="+")
    parser.add_argument("--label", default="", help="keep this index beside the default one (daemon/<name>-<label>)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    for name in args.projects:
        try:
            record = index_at(name, load_or_prepare(name).root, args.label)
        except (CorpusError, BenchDaemonError) as exc:
            print(f"bench.search.index_set: {name}: {exc}", file=sys.stderr)
            return 1
        print(json.dumps({"project": name, "wall_s": record["wall_s"], "summary": record["summary"]}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
