"""The projects of the localization benchmark: each pinned by a commit and a window of its history.

Chosen before any run, for their size (an index in minutes on two cores), their
languages (Python; C and C++; psutil both) and commit messages that say what
changed. A project's candidates are the non-merge commits reachable from `pin`
committed since `since`; at most `cap` of those that qualify are drawn with `seed`.
Windows are short (about 55 qualifying commits each, months to a few years of
history): consecutive parents then differ by a few commits, so the benchmark's daemon
re-indexes and re-learns little between two of them.

Which files hold answers: the project's own code, never tests, docs, examples,
benchmarks, build scripts or bundled third-party code (what the index skips, see
graph/index/builder/files/walk.py, it could not find anyway), nor `exclude` (generated files).
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass
from pathlib import PurePosixPath

from lensmux.graph.index.builder.files.walk import ALWAYS_SKIPPED_DIRS, DEFAULT_SKIPPED_DIRS

__all__ = ["PROJECTS", "Project", "answer_language", "is_library_path"]

PYTHON_SUFFIXES = frozenset({".py"})
C_SUFFIXES = frozenset({".c", ".h", ".cc", ".cpp", ".cxx", ".c++", ".hpp", ".hh", ".hxx", ".ipp", ".inl"})
_NOT_LIBRARY_DIRS = frozenset(
    {
        "test", "tests", "testing", "testsuite", "unittests", "doc", "docs", "documentation", "example",
        "examples", "sample", "samples", "demo", "demos", "benchmark", "benchmarks", "bench", "scripts",
        "script", "tools", "contrib", "fuzz", "fuzzing", "ossfuzz", "ci", ".github", "extern", "external",
    }
)  # fmt: skip
_NOT_LIBRARY_FILES = ("test_*.py", "*_test.py", "*_tests.py", "conftest.py", "setup.py", "noxfile.py", "*_test.c")


@dataclass(frozen=True, slots=True)
class Project:
    """One repository, pinned, and the window its commits are drawn from."""

    name: str
    github: str  # owner/name
    pin: str  # the newest commit of the window (full sha)
    since: str  # committer date, YYYY-MM-DD
    kind: str  # "python", "c", "cpp" or "python+c": what the answers are written in
    cap: int = 35
    seed: int = 22
    exclude: tuple[str, ...] = ()  # globs of paths that hold no answers (generated code)

    @property
    def mirror_name(self) -> str:
        """The directory name `fetch` gives its mirror (`owner+name`)."""
        return self.github.replace("/", "+")


PROJECTS: dict[str, Project] = {
    p.name: p
    for p in (
        Project("flask", "pallets/flask", "2ac89889f4cc330eabd50f295dcef02828522c69", "2023-05-01", "python"),
        Project("requests", "psf/requests", "1f6589ec3a1ee910f9a65cc3ceac60b26677bc0e", "2019-09-01", "python"),
        Project("click", "pallets/click", "2c8cd3ac958a7eb316d67f2d316c27086c4c0369", "2026-04-01", "python"),
        Project("rich", "Textualize/rich", "42899d8a0a96b121a514516f4be9db44ff7aeaf3", "2024-09-01", "python"),
        Project("attrs", "python-attrs/attrs", "c1dc5dcba16ed827aa6dcad896b41a3afedb4e32", "2023-08-01", "python"),
        Project("jinja", "pallets/jinja", "5ef70112a1ff19c05324ff889dd30405b1002044", "2021-06-01", "python"),
        Project("psutil", "giampaolo/psutil", "d77cf39abb5b423bde4bb0420eba78203281376b", "2026-07-01", "python+c"),
        Project(
            "jq",
            "jqlang/jq",
            "579e6f76cffd7643ba4002a2c3618a5ea710589a",
            "2024-11-01",
            "c",
            exclude=("src/parser.c", "src/parser.h", "src/lexer.c", "src/lexer.h", "src/builtin.inc"),
        ),
        Project("lz4", "lz4/lz4", "d9c01a3d49114dc28e2dfbbc0a8990e88be7b694", "2024-01-01", "c"),
        Project("libuv", "libuv/libuv", "6179e7af87413396d5853a1c3722c8b5749336c8", "2025-08-01", "c"),
        Project(
            "fmt", "fmtlib/fmt", "60ccad511fd680cb91d8b60a315759f71c67bef9", "2026-02-01", "cpp", exclude=("support/*",)
        ),
    )
}


def answer_language(path: str) -> str | None:
    """ "python" or "c" (C and C++ alike) for a file that can hold answers, else None."""
    suffix = PurePosixPath(path).suffix.lower()
    if suffix in PYTHON_SUFFIXES:
        return "python"
    if suffix in C_SUFFIXES:
        return "c"
    return None


def is_library_path(project: Project, path: str) -> bool:
    """Whether a file is the project's own code (not tests, docs, examples, tools, vendored or excluded)."""
    pure = PurePosixPath(path)
    dirs = {part.lower() for part in pure.parts[:-1]}
    if dirs & (_NOT_LIBRARY_DIRS | DEFAULT_SKIPPED_DIRS | ALWAYS_SKIPPED_DIRS):
        return False
    if any(fnmatch.fnmatch(pure.name, pattern) for pattern in _NOT_LIBRARY_FILES):
        return False
    return not any(fnmatch.fnmatch(path, pattern) for pattern in project.exclude)
