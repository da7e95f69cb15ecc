"""Pinned PyPI sdists as benchmark corpora, and the C project the clangd benchmarks query.

Only PyPI, npm and Debian are reachable from the benchmark machines, so a "real
project" is a source distribution: pip downloads it (`--no-binary :all:
--no-deps`), the archive is checked against a pinned sha256 and unpacked once
under bench/out/, which git ignores (downloaded sources are never committed).
`Sdist` and `fetch_sdist` serve every corpus (the index and search benchmarks
pin Python projects); the rest of this module is the clangd corpus.

The clangd corpus is Google's brotli. The sdist of the `brotli` Python binding carries the complete C library
(`c/common`, `c/dec`, `c/enc`, `c/include`, `c/tools`: 36 .c and 71 .h files,
about 42,000 lines).

    python -m bench.fetch_corpus          # download, verify, unpack brotli; prints the root
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
from dataclasses import dataclass, field
from pathlib import Path

from bench import OUT_DIR
from bench.stats import write_atomic

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Sdist:
    """One pinned source distribution on PyPI."""

    package: str
    version: str
    sha256: str
    # Where the archive's names differ from the package's (`ruamel_yaml_clib-0.2.15.tar.gz`
    # holding `ruamel.yaml.clib-0.2.15/`): the name in the archive file, the name of its top directory.
    archive_stem: str = field(default="", kw_only=True)
    tree_stem: str = field(default="", kw_only=True)

    @property
    def archive(self) -> str:
        """The file name pip saves."""
        return f"{self.archive_stem or self.package}-{self.version}.tar.gz"

    @property
    def tree(self) -> str:
        """The top directory inside the archive."""
        return f"{self.tree_stem or self.package}-{self.version}"

    @property
    def description(self) -> str:
        """One line for reports."""
        return f"{self.package} {self.version} (PyPI sdist {self.archive}, sha256 {self.sha256})"


BROTLI = Sdist("brotli", "1.2.1", "02b2f7b5a83485efe448a44ddf7983def05c3bb1dcf917d4f7154070260e13de")
PROJECT_DIR = BROTLI.tree

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
        return (
            f"{BROTLI.package} {BROTLI.version} C library (PyPI sdist {BROTLI.archive}, sha256 {BROTLI.sha256[:16]}…)"
        )


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


def fetch_sdist(sdist: Sdist, out_dir: Path, ready: str = "PKG-INFO") -> Path:
    """Download, verify and unpack one sdist under `out_dir`; the pristine tree.

    `ready` is a file inside the tree whose presence means an earlier unpack completed.
    """
    archive = pip_download(sdist.package, sdist.version, sdist.archive, sdist.sha256, out_dir / "downloads")
    return unpack_once(archive, out_dir / "corpus", sdist.tree, ready)


def fetch_pristine(out_dir: Path = OUT_DIR) -> Path:
    """Download, verify and unpack the brotli corpus; return the pristine tree."""
    return fetch_sdist(BROTLI, out_dir, "c/include/brotli/decode.h")


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
