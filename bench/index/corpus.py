"""The real Python repositories the semantic-index benchmark indexes, from pinned PyPI sdists.

Fetched like every corpus (bench/fetch_corpus.py) into bench/out/index/.

    python -m bench.index.corpus rich      # download, verify, unpack; prints the root
"""

from __future__ import annotations

import logging
import shutil
import sys
from pathlib import Path

from bench import OUT_DIR as BENCH_OUT
from bench.fetch_corpus import CorpusError, Sdist, fetch_sdist
from bench.runner import arg_parser

OUT_DIR = BENCH_OUT / "index"

log = logging.getLogger(__name__)

# rich: 78 Python files, ~27k lines (library, tests, examples): big enough that the
# model dominates and that pyright has real work; requests: a small second data point.
CORPORA: dict[str, Sdist] = {
    "rich": Sdist("rich", "13.9.4", "439594978a49a09530cff7ebc4b5c7103ef57baf48d5ea3184f21d9a2befa098"),
    "requests": Sdist("requests", "2.32.3", "55365417734eb18255590a9ff9eb97e9e1da868d4ccd6402399eaf68af20a760"),
}


def fetch(name: str, out_dir: Path = OUT_DIR) -> tuple[Sdist, Path]:
    """Download, verify and unpack one corpus; return it and its pristine tree."""
    if name not in CORPORA:
        raise CorpusError(f"unknown corpus {name!r} (known: {', '.join(CORPORA)})")
    sdist = CORPORA[name]
    return sdist, fetch_sdist(sdist, out_dir)


def fresh_copy(name: str, label: str, out_dir: Path = OUT_DIR) -> tuple[Sdist, Path]:
    """A private copy of a corpus for one run (its mtimes are new, nothing is cached by path)."""
    sdist, pristine = fetch(name, out_dir)
    root = out_dir / "roots" / label / sdist.tree
    shutil.rmtree(root.parent, ignore_errors=True)
    shutil.copytree(pristine, root)
    # The copy lives under bench/out/, which the checkout's .gitignore ignores; a .git of
    # its own makes it a work tree of its own, as a real checkout is, so the index reads it.
    (root / ".git").mkdir(exist_ok=True)
    return sdist, root


def main(argv: list[str] | None = None) -> int:
    """Fetch a corpus and print where it is."""
    parser = arg_parser(__doc__)
    parser.add_argument("corpus", nargs="?", default="rich", choices=sorted(CORPORA))
    parser.add_argument("--out", type=Path, default=OUT_DIR, help="output folder (default bench/out/index)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    try:
        _, tree = fetch(args.corpus, args.out)
    except CorpusError as exc:
        print(f"bench.index.corpus: {exc}", file=sys.stderr)
        return 1
    py_files = sorted(tree.rglob("*.py"))
    lines = sum(len(p.read_bytes().splitlines()) for p in py_files)
    print(f"{tree}: {len(py_files)} .py files, {lines} lines")
    return 0


if __name__ == "__main__":
    sys.exit(main())
