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
import hashlib
import logging
import shutil
import subprocess
import sys
import tarfile
from dataclasses import dataclass
from pathlib import Path

OUT_DIR = Path(__file__).resolve().parent / "out" / "index"

log = logging.getLogger(__name__)


class CorpusError(Exception):
    """Base of problems obtaining a benchmark repository."""


class CorpusDownloadFailed(CorpusError):
    """pip could not download the sdist."""


class CorpusChecksumMismatch(CorpusError):
    """The downloaded sdist is not the pinned one."""


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


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def download(sdist: Sdist, dest: Path) -> Path:
    """The pinned archive in `dest`, downloaded with pip unless already there and intact."""
    dest.mkdir(parents=True, exist_ok=True)
    archive = dest / sdist.archive
    if archive.is_file() and _sha256(archive) == sdist.sha256:
        return archive
    argv = [
        sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
        "--dest", str(dest), f"{sdist.package}=={sdist.version}",
    ]  # fmt: skip
    log.info("downloading %s: %s", sdist.archive, " ".join(argv))
    done = subprocess.run(argv, capture_output=True, text=True)
    if done.returncode != 0 or not archive.is_file():
        raise CorpusDownloadFailed(f"pip download {sdist.package}=={sdist.version} failed:\n{done.stderr[-2000:]}")
    actual = _sha256(archive)
    if actual != sdist.sha256:
        raise CorpusChecksumMismatch(f"{archive}: sha256 {actual}, expected {sdist.sha256}")
    return archive


def unpack(sdist: Sdist, archive: Path, dest: Path) -> Path:
    """The pristine tree, unpacked once through a partial directory (tarfile's `data` filter)."""
    tree = dest / sdist.tree
    if (tree / "PKG-INFO").is_file():
        return tree
    partial = dest / f".{sdist.tree}.partial"
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    with tarfile.open(archive) as tar:
        tar.extractall(partial, filter="data")
    shutil.rmtree(tree, ignore_errors=True)
    (partial / sdist.tree).rename(tree)
    partial.rmdir()
    return tree


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
