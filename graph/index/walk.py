"""Finding the files to index: .gitignore rules, junk directories, size cap, binaries."""

from __future__ import annotations

import hashlib
import logging
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

import pathspec

from lensmux.graph.index.languages import language_for

log = logging.getLogger(__name__)

# Never useful to index and often huge; a gitignore rule can't re-include them.
ALWAYS_SKIPPED_DIRS = frozenset({".git", ".hg", ".svn", ".jj"})
# Skipped by default even when not gitignored: environments and tool caches, not the
# project's own source. Build output dirs (build/, dist/, target/) are left to
# .gitignore because some projects keep real sources under such names.
DEFAULT_SKIPPED_DIRS = frozenset(
    {
        "node_modules",
        ".venv",
        "venv",
        "__pycache__",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        ".tox",
        ".nox",
        ".hypothesis",
        ".cache",
        ".idea",
        ".vs",
        ".eggs",
    }
)
DEFAULT_MAX_FILE_BYTES = 1 << 20
_BINARY_SNIFF_BYTES = 8192


@dataclass(frozen=True, slots=True)
class WalkedFile:
    """One indexable file found under the root."""

    rel: str  # POSIX path relative to the root
    language: str
    size: int
    mtime_ns: int


@dataclass(frozen=True, slots=True)
class SourceText:
    """A file's decoded text and the sha256 of its bytes."""

    text: str
    sha256: str


class IgnoreRules:
    """Decides whether a path under root is ignored (nested .gitignore, junk dirs)."""

    def __init__(self, root: Path, extra_skipped_dirs: frozenset[str] = frozenset()) -> None:
        self.root = root
        self._skipped = ALWAYS_SKIPPED_DIRS | DEFAULT_SKIPPED_DIRS | extra_skipped_dirs
        self._specs: dict[str, pathspec.GitIgnoreSpec | None] = {}

    def invalidate(self) -> None:
        """Forget cached .gitignore files (call when one changes)."""
        self._specs.clear()

    def _spec(self, rel_dir: str) -> pathspec.GitIgnoreSpec | None:
        if rel_dir not in self._specs:
            lines: list[str] = []
            ignore_file = self.root / rel_dir / ".gitignore"
            try:
                lines = ignore_file.read_text(encoding="utf-8", errors="replace").splitlines()
            except FileNotFoundError:
                pass
            except OSError as exc:
                log.warning("cannot read %s: %s", ignore_file, exc)
            if rel_dir == "":
                try:
                    exclude = self.root / ".git" / "info" / "exclude"
                    lines = exclude.read_text(encoding="utf-8", errors="replace").splitlines() + lines
                except OSError:
                    pass
            self._specs[rel_dir] = pathspec.GitIgnoreSpec.from_lines(lines) if lines else None
        return self._specs[rel_dir]

    def matches(self, rel: str, is_dir: bool) -> bool:
        """Whether rel is ignored by the .gitignore files of its ancestors (not the ancestors)."""
        parts = PurePosixPath(rel).parts
        verdict: bool | None = None
        # A deeper .gitignore overrides a shallower one, like git.
        for depth in range(len(parts)):
            spec = self._spec("/".join(parts[:depth]))
            if spec is None:
                continue
            sub = "/".join(parts[depth:]) + ("/" if is_dir else "")
            include = spec.check_file(sub).include
            if include is not None:
                verdict = include
        return bool(verdict)

    def skips_dir_name(self, name: str) -> bool:
        """Whether a directory with this name is never walked."""
        return name in self._skipped or name.endswith(".egg-info")

    def is_ignored(self, rel: str, is_dir: bool = False) -> bool:
        """Whether rel (POSIX, relative to root) or any directory above it is ignored."""
        parts = PurePosixPath(rel).parts
        if not parts or parts[0] == "..":
            return True
        for depth in range(1, len(parts) + 1):
            here = "/".join(parts[:depth])
            here_is_dir = depth < len(parts) or is_dir
            if here_is_dir and (self.skips_dir_name(parts[depth - 1]) or (self.root / here / "pyvenv.cfg").exists()):
                return True
            if self.matches(here, here_is_dir):
                return True
        return False


def walk_files(rules: IgnoreRules, max_file_bytes: int = DEFAULT_MAX_FILE_BYTES, under: str = "") -> list[WalkedFile]:
    """All indexable files under rules.root (or its subdirectory under), sorted; no symlinks."""
    found: list[WalkedFile] = []
    if under and rules.is_ignored(under, is_dir=True):
        return found
    for rel, st in _walk(rules, under):
        language = language_for(rel)
        if language is None:
            continue
        if st.st_size > max_file_bytes:
            log.info("skipping %s: %d bytes is over the %d byte cap", rel, st.st_size, max_file_bytes)
            continue
        found.append(WalkedFile(rel, language, st.st_size, st.st_mtime_ns))
    found.sort(key=lambda f: f.rel)
    return found


def _walk(rules: IgnoreRules, rel_dir: str) -> Iterator[tuple[str, os.stat_result]]:
    directory = rules.root / rel_dir
    try:
        entries = list(os.scandir(directory))
    except OSError as exc:
        log.warning("cannot list %s: %s", directory, exc)
        return
    if rel_dir and any(e.name == "pyvenv.cfg" for e in entries):
        return  # a virtualenv under any name
    for entry in entries:
        rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
        try:
            if entry.is_symlink():
                continue
            if entry.is_dir():
                if rules.skips_dir_name(entry.name) or rules.matches(rel, True):
                    continue
                yield from _walk(rules, rel)
            elif entry.is_file() and not rules.matches(rel, False):
                yield rel, entry.stat()
        except OSError as exc:
            log.warning("cannot stat %s: %s", directory / entry.name, exc)


def read_source(path: Path, max_file_bytes: int = DEFAULT_MAX_FILE_BYTES) -> SourceText | None:
    """The file's text, or None when it is missing, too big, binary or not UTF-8."""
    try:
        with path.open("rb") as fh:
            data = fh.read(max_file_bytes + 1)
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        return None
    except OSError as exc:
        log.warning("cannot read %s: %s", path, exc)
        return None
    if len(data) > max_file_bytes:
        log.info("skipping %s: over the %d byte cap", path, max_file_bytes)
        return None
    if b"\0" in data[:_BINARY_SNIFF_BYTES]:
        log.debug("skipping binary file %s", path)
        return None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        log.debug("skipping %s: not UTF-8", path)
        return None
    return SourceText(text, hashlib.sha256(data).hexdigest())
