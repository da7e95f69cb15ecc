"""The monorepo of the monorepo benchmark: pinned sdists side by side under one git checkout.

Only PyPI, npm and Debian are reachable here, so the monorepo is assembled from
source distributions (bench/fetch_corpus.py fetches and verifies each), copied
side by side under one root that is a git work tree: one commit per project, in
the order below, with fixed dates, as a fresh clone of a repository would be.
A size takes whole projects in that order until the lines the walker indexes in
Python, C and C++ files reach it; the order mixes the languages so that every
size has both. The lines are counted by lensmux's own walker (its ignore rules,
vendored and generated files left out), so they are the lines lensmux indexes.

    python -m bench.index.monorepo_tree 1m     # fetch, assemble, count; prints the root
"""

from __future__ import annotations

import collections
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.fetch_corpus import CorpusError, Sdist, fetch_sdist
from bench.index.corpus import OUT_DIR
from bench.runner import arg_parser
from bench.search.corpus import PROJECTS
from lensmux.graph.index.builder.files.walk import IgnoreRules, walk_files

CODE_LANGUAGES = frozenset({"python", "c", "cpp"})

# The three C/C++-heavy sdists only this benchmark uses (the others are the search benchmark's pins).
# pillow: its C imaging library (src/libImaging) beside the Python package; zstandard: the zstd
# library's C beside its binding; grpcio: gRPC's C core and C++ sources (its third_party/ is
# vendored, which the walker skips).
EXTRA: dict[str, Sdist] = {
    "pillow": Sdist("pillow", "11.0.0", "72bacbaf24ac003fea9bff9837d1eedb6088758d41e100c1552930151f677739"),
    "zstandard": Sdist("zstandard", "0.23.0", "b2d8c62d08e7255f68f7a740bae85b3c9b8e5466baa9cbf7f57f1cde0ac6bc09"),
    "grpcio": Sdist("grpcio", "1.68.1", "44a8502dd5de653ae6a73e2de50a401d84184f0331d0ac3daeb044e66d5c5054"),
}

# The order projects join the monorepo; a size is a prefix of it. tornado comes first: the
# benchmark's user works in it (bench/index/monorepo.py), so every size holds it.
ORDER = (
    "tornado", "brotli", "libyaml",                                         # ~101k lines, 56% C
    "psutil", "rich", "lmdb", "jinja2", "click", "attrs", "jsonnet",        # ~307k, 42% C/C++
    "flask", "requests", "c-ares", "sentencepiece", "pillow", "zstandard", "grpcio",  # ~1.08M, 70% C/C++
)  # fmt: skip
SIZES = {"100k": 100_000, "300k": 300_000, "1m": 1_000_000}


class TreeTooSmall(CorpusError):
    """Every project together holds fewer lines than the size asks for."""


@dataclass(frozen=True, slots=True)
class Tree:
    """An assembled monorepo and what the walker finds in it."""

    root: Path
    projects: tuple[tuple[str, Sdist], ...]
    files: dict[str, int]  # per language, every language the walker indexes
    lines: dict[str, int]

    @property
    def code_lines(self) -> int:
        """Lines of Python, C and C++ files the walker indexes."""
        return sum(n for language, n in self.lines.items() if language in CODE_LANGUAGES)

    def directory(self, name: str) -> Path:
        """Where one project's tree is inside the root."""
        return self.root / dict(self.projects)[name].tree

    def describe(self) -> dict[str, Any]:
        """JSON form for the report."""
        return {
            "root": str(self.root),
            "projects": [{"name": name, "sdist": sdist.description} for name, sdist in self.projects],
            "code_lines": self.code_lines,
            "all_lines": sum(self.lines.values()),
            "files": self.files,
            "lines": self.lines,
        }


def _sdist(name: str) -> Sdist:
    return EXTRA[name] if name in EXTRA else PROJECTS[name]


def _count(root: Path, under: str = "") -> tuple[dict[str, int], dict[str, int]]:
    """Files and lines per language of what lensmux's walker indexes under `root` (or its `under`)."""
    files: collections.Counter[str] = collections.Counter()
    lines: collections.Counter[str] = collections.Counter()
    for walked in walk_files(IgnoreRules(root), under=under):
        files[walked.language] += 1
        lines[walked.language] += len((root / walked.rel).read_bytes().splitlines())
    return dict(files), dict(lines)


def _git(root: Path, *args: str) -> None:
    # Fixed names and dates: the same size gives the same commits on every run.
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "bench",
        "GIT_AUTHOR_EMAIL": "bench@localhost",
        "GIT_COMMITTER_NAME": "bench",
        "GIT_COMMITTER_EMAIL": "bench@localhost",
        "GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z",
        "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z",
    }
    subprocess.run(["git", "-C", str(root), *args], env=env, check=True, capture_output=True)


def build(size: str, label: str, out_dir: Path = OUT_DIR) -> Tree:
    """A fresh monorepo of `size` (a key of SIZES) under out_dir/roots/<label>/monorepo, committed."""
    target = SIZES[size]
    root = out_dir / "roots" / label / "monorepo"
    shutil.rmtree(root.parent, ignore_errors=True)
    root.mkdir(parents=True)
    _git(root, "init", "--quiet", "--initial-branch", "main")
    taken: list[tuple[str, Sdist]] = []
    code = 0
    for name in ORDER:
        sdist = _sdist(name)
        shutil.copytree(fetch_sdist(sdist, out_dir), root / sdist.tree)
        _git(root, "add", "--all", "--force", sdist.tree)
        _git(root, "commit", "--quiet", "--no-verify", "-m", f"Add {sdist.package} {sdist.version}")
        taken.append((name, sdist))
        _, lines = _count(root, sdist.tree)
        code += sum(n for language, n in lines.items() if language in CODE_LANGUAGES)
        if code >= target:
            break
    else:
        raise TreeTooSmall(f"all of {', '.join(ORDER)} hold {code} lines, fewer than {target}")
    files, lines = _count(root)
    return Tree(root, tuple(taken), files, lines)


def main(argv: list[str] | None = None) -> int:
    """Assemble one size and print what it holds."""
    parser = arg_parser(__doc__)
    parser.add_argument("size", choices=sorted(SIZES))
    args = parser.parse_args(argv)
    try:
        tree = build(args.size, f"tree-{args.size}")
    except (CorpusError, subprocess.CalledProcessError) as exc:
        print(f"bench.index.monorepo_tree: {exc}", file=sys.stderr)
        return 1
    print(f"{tree.root}: {tree.code_lines} lines of Python, C and C++; {tree.files}; {tree.lines}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
