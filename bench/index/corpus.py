"""The real Python repositories the semantic-index benchmark indexes, from pinned PyPI sdists.

Only PyPI, npm and Debian are reachable from the benchmark machines, so the
"real repository" is a source distribution: pip downloads it (`--no-binary
:all: --no-deps`), the archive is checked against a pinned sha256 and unpacked
under bench/out/index/corpus/, which git ignores (downloaded sources are never
committed).

    python -m bench.bench_index_corpus rich      # download, verify, unpack; prints the root
"""

from __future__ import annotations

import argparse
import logging
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

from bench.fetch_corpus import (
    CorpusChecksumMismatch,
    CorpusDownloadFailed,
    CorpusError,
    pip_download,
    unpack_once,
)

OUT_DIR = Path(__file__).resolve().parent / "out" / "index"

log = logging.getLogger(__name__)

__all__ = ["CorpusChecksumMismatch", "CorpusDownloadFailed", "CorpusError"]


@dataclass(frozen=True, slots=True)
class Sdist:
    """One pinned source distribution."""

    package: str
    version: str
    sha256: str

    @property
    def archive(self) -> str:
        """The file name pip saves."""
        return f"{self.package}-{self.version}.tar.gz"

    @property
    def tree(self) -> str:
        """The top directory inside the archive."""
        return f"{self.package}-{self.version}"

    @property
    def description(self) -> str:
        """One line for reports."""
        return f"{self.package} {self.version} (PyPI sdist {self.archive}, sha256 {self.sha256})"


# rich: 78 Python files, ~27k lines (library, tests, examples): big enough that the
# model dominates and that pyright has real work; requests: a small second data point.
CORPORA: dict[str, Sdist] = {
    "rich": Sdist("rich", "13.9.4", "439594978a49a09530cff7ebc4b5c7103ef57baf48d5ea3184f21d9a2befa098"),
    "requests": Sdist("requests", "2.32.3", "55365417734eb18255590a9ff9eb97e9e1da868d4ccd6402399eaf68af20a760"),
}


def download(sdist: Sdist, dest: Path) -> Path:
    """The pinned archive in `dest`, downloaded with pip unless already there and intact."""
    return pip_download(sdist.package, sdist.version, sdist.archive, sdist.sha256, dest)


def unpack(sdist: Sdist, archive: Path, dest: Path) -> Path:
    """The pristine tree, unpacked once."""
    return unpack_once(archive, dest, sdist.tree, "PKG-INFO")


def fetch(name: str, out_dir: Path = OUT_DIR) -> tuple[Sdist, Path]:
    """Download, verify and unpack one corpus; return it and its pristine tree."""
    if name not in CORPORA:
        raise CorpusError(f"unknown corpus {name!r} (known: {', '.join(CORPORA)})")
    sdist = CORPORA[name]
    archive = download(sdist, out_dir / "downloads")
    return sdist, unpack(sdist, archive, out_dir / "corpus")


def fresh_copy(name: str, label: str, out_dir: Path = OUT_DIR) -> tuple[Sdist, Path]:
    """A private copy of a corpus for one run (its mtimes are new, nothing is cached by path)."""
    sdist, pristine = fetch(name, out_dir)
    root = out_dir / "roots" / label / sdist.tree
    shutil.rmtree(root.parent, ignore_errors=True)
    shutil.copytree(pristine, root)
    return sdist, root


def main(argv: list[str] | None = None) -> int:
    """Fetch a corpus and print where it is."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("corpus", nargs="?", default="rich", choices=sorted(CORPORA))
    parser.add_argument("--out", type=Path, default=OUT_DIR, help="output folder (default bench/out/index)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    try:
        _, tree = fetch(args.corpus, args.out)
    except CorpusError as exc:
        print(f"bench_index_corpus: {exc}", file=sys.stderr)
        return 1
    py_files = sorted(tree.rglob("*.py"))
    lines = sum(len(p.read_bytes().splitlines()) for p in py_files)
    print(f"{tree}: {len(py_files)} .py files, {lines} lines")
    return 0


if __name__ == "__main__":
    sys.exit(main())
