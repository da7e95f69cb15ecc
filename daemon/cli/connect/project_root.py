"""The project a directory belongs to: the nearest ancestor with a project marker."""

from __future__ import annotations

from pathlib import Path

MARKERS = (
    ".git", ".hg", "pyproject.toml", "setup.py", "setup.cfg", "compile_commands.json", "compile_flags.txt",
    "CMakeLists.txt", "meson.build", "Cargo.toml", "go.mod", "package.json", "Makefile",
)  # fmt: skip


def enclosing_project(start: Path) -> Path:
    """The nearest directory at or above `start` holding a marker, else `start` itself."""
    start = start.resolve()
    home = Path.home().resolve()
    for candidate in (start, *start.parents):
        if candidate == home or candidate == Path("/"):
            break
        if any((candidate / marker).exists() for marker in MARKERS) or any(candidate.glob("*.sln")):
            return candidate
    return start
