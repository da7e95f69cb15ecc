"""The real C project the clangd benchmarks query: Google's brotli, from its PyPI sdist.

The sdist of the `brotli` Python binding carries the complete C library
(`c/common`, `c/dec`, `c/enc`, `c/include`, `c/tools`: 36 .c and 71 .h files,
about 42,000 lines). It is fetched with pip (PyPI is reachable where Debian
source packages need deb-src lines and root), pinned by version and sha256,
and unpacked under bench/out/, which git ignores: downloaded sources are never
committed.

    python -m bench.fetch_corpus          # download, verify, unpack; prints the root
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import shutil
import subprocess
import sys
import tarfile
from dataclasses import dataclass
from pathlib import Path

from bench import OUT_DIR
from bench.stats import write_atomic

log = logging.getLogger(__name__)

PACKAGE = "brotli"
VERSION = "1.2.1"
SDIST = f"{PACKAGE}-{VERSION}.tar.gz"
SHA256 = "02b2f7b5a83485efe448a44ddf7983def05c3bb1dcf917d4f7154070260e13de"
PROJECT_DIR = f"{PACKAGE}-{VERSION}"

# A compilation database, not compile_flags.txt: clangd's background index
# only indexes files a database lists, and without that index references
# would cover the open files only. The library includes <brotli/*.h> from c/include.
COMPILE_ARGS = ("cc", "-std=c99", "-Wall", "-Ic/include", "-c")

# The files the latency benchmark opens: the decoder, the encoder and the bit
# writer, the library's three largest translation units. Three, because clangd
# keeps at most three idle ASTs by default (MaxRetainedASTs): a fourth would make
# every round rebuild an AST, and the benchmark is about warm requests.
BENCH_FILES = (
    "c/dec/decode.c",
    "c/enc/encode.c",
    "c/enc/brotli_bit_stream.c",
)


class CorpusError(Exception):
    """Base of problems obtaining the benchmark corpus."""


class CorpusDownloadFailed(CorpusError):
    """pip could not download the sdist."""


class CorpusChecksumMismatch(CorpusError):
    """The downloaded sdist is not the pinned one."""


@dataclass(frozen=True, slots=True)
class Corpus:
    """An unpacked copy of the project, ready for clangd."""

    root: Path
    files: tuple[str, ...] = BENCH_FILES

    def path(self, relative: str) -> Path:
        """Absolute path of one project file."""
        return self.root / relative

    @property
    def description(self) -> str:
        """One line for reports."""
        return f"{PACKAGE} {VERSION} C library (PyPI sdist {SDIST}, sha256 {SHA256[:16]}…)"


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def pip_download(package: str, version: str, archive_name: str, sha256: str, dest: Path) -> Path:
    """A pinned sdist in `dest`, downloaded with pip unless already there and intact."""
    dest.mkdir(parents=True, exist_ok=True)
    archive = dest / archive_name
    if archive.is_file() and _sha256(archive) == sha256:
        return archive
    argv = [
        sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
        "--dest", str(dest), f"{package}=={version}",
    ]  # fmt: skip
    log.info("downloading %s: %s", archive_name, " ".join(argv))
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    if done.returncode != 0 or not archive.is_file():
        raise CorpusDownloadFailed(f"pip download {package}=={version} failed:\n{done.stderr[-2000:]}")
    actual = _sha256(archive)
    if actual != sha256:
        raise CorpusChecksumMismatch(f"{archive}: sha256 {actual}, expected {sha256}")
    return archive


def unpack_once(archive: Path, dest: Path, tree_name: str, ready: str) -> Path:
    """The pristine tree, unpacked once through a partial directory (tarfile's `data` filter).

    `ready` is a file inside the tree whose presence means a complete earlier unpack.
    """
    tree = dest / tree_name
    if (tree / ready).is_file():
        return tree
    partial = dest / f".{tree_name}.partial"
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    with tarfile.open(archive) as tar:
        tar.extractall(partial, filter="data")
    shutil.rmtree(tree, ignore_errors=True)
    (partial / tree_name).rename(tree)
    partial.rmdir()
    return tree


def download_sdist(dest: Path) -> Path:
    """The pinned brotli sdist in `dest`."""
    return pip_download(PACKAGE, VERSION, SDIST, SHA256, dest)


def unpack(archive: Path, dest: Path) -> Path:
    """The pristine brotli source tree, unpacked once."""
    return unpack_once(archive, dest, PROJECT_DIR, "c/include/brotli/decode.h")


def fetch_pristine(out_dir: Path = OUT_DIR) -> Path:
    """Download, verify and unpack the corpus; return the pristine tree."""
    archive = download_sdist(out_dir / "downloads")
    return unpack(archive, out_dir / "corpus")


def compilation_database(root: Path) -> str:
    """compile_commands.json for every .c file of the library and its command-line tool."""
    entries = [
        {"directory": str(root), "file": str(path), "arguments": [*COMPILE_ARGS, str(path.relative_to(root))]}
        for path in sorted(root.glob("c/**/*.c"))
    ]
    return json.dumps(entries, indent=1) + "\n"


def working_copy(name: str, out_dir: Path = OUT_DIR) -> Corpus:
    """A private copy of the project for one path under test, with its compilation database.

    Each path gets its own copy so two clangd processes never share one
    `.cache/clangd` index directory; the copies keep their index between runs.
    """
    pristine = fetch_pristine(out_dir)
    root = out_dir / "roots" / name / PROJECT_DIR
    if not (root / "c").is_dir():
        shutil.rmtree(root, ignore_errors=True)
        shutil.copytree(pristine, root)
    database = root / "compile_commands.json"
    text = compilation_database(root)
    if not database.is_file() or database.read_text() != text:
        write_atomic(database, text)
    missing = [f for f in BENCH_FILES if not (root / f).is_file()]
    if missing:
        raise CorpusError(f"{root}: benchmark files missing: {missing}")
    return Corpus(root)


def main(argv: list[str] | None = None) -> int:
    """Fetch the corpus and print where it is."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=OUT_DIR, help="output folder (default bench/out)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    try:
        tree = fetch_pristine(args.out)
    except CorpusError as exc:
        print(f"fetch_corpus: {exc}", file=sys.stderr)
        return 1
    c_files = sorted(tree.glob("c/**/*.c"))
    h_files = sorted(tree.glob("c/**/*.h"))
    print(f"{tree}: {len(c_files)} .c and {len(h_files)} .h files")
    return 0


if __name__ == "__main__":
    sys.exit(main())
