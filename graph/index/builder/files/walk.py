"""Finding the files to index: .gitignore and .lensmuxignore rules, junk directories, size cap, binaries.

Rules come from every `.gitignore` and `.lensmuxignore` (same syntax, read after the
`.gitignore` of its directory, so it can override it) in the root and below, from the
ones of its ancestors up to the enclosing git work tree, and from `.git/info/exclude`.
Directories of vendored code, environments and built documentation are skipped unless
a rule re-includes them with `!`.
"""

from __future__ import annotations

import hashlib
import logging
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

import pathspec

from lensmux.graph.index.builder.files.junk import junk_name
from lensmux.graph.index.builder.files.languages import language_for

log = logging.getLogger(__name__)

# Never useful to index and often huge; a gitignore rule can't re-include them.
ALWAYS_SKIPPED_DIRS = frozenset({".git", ".hg", ".svn", ".jj"})
# Skipped by default even when not gitignored: environments, tool caches, vendored code
# and built documentation, not the project's own source. Build output dirs (build/,
# dist/, target/) are left to .gitignore because some projects keep real sources under
# such names. A `!name/` rule in .gitignore or .lensmuxignore re-includes any of these.
DEFAULT_SKIPPED_DIRS = frozenset(
    {
        "node_modules",
        "bower_components",
        "site-packages",
        "vendor",
        "third_party",
        "third-party",
        "_build",
        "htmlcov",
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
# A directory holding one of these is generated documentation (Sphinx, Doxygen, MkDocs).
BUILT_DOCS_MARKERS = frozenset({".buildinfo", "searchindex.js", "doxygen.css", "mkdocs_search_index.json"})
IGNORE_FILES = (".gitignore", ".lensmuxignore")
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
    """Decides whether a path under root is ignored (nested ignore files, junk dirs)."""

    def __init__(self, root: Path, extra_skipped_dirs: frozenset[str] = frozenset()) -> None:
        self.root = root
        self._skipped = ALWAYS_SKIPPED_DIRS | DEFAULT_SKIPPED_DIRS | extra_skipped_dirs
        self._specs: dict[str, pathspec.GitIgnoreSpec | None] = {}
        self._outer: list[tuple[pathspec.GitIgnoreSpec, str]] | None = None

    def invalidate(self) -> None:
        """Forget cached ignore files (call when one changes)."""
        self._specs.clear()
        self._outer = None

    def _spec(self, rel_dir: str) -> pathspec.GitIgnoreSpec | None:
        if rel_dir not in self._specs:
            lines = [line for name in IGNORE_FILES for line in _read_lines(self.root / rel_dir / name)]
            if rel_dir == "" and (self.root / ".git").exists():
                lines = _read_lines(self.root / ".git" / "info" / "exclude", quiet=True) + lines
            self._specs[rel_dir] = pathspec.GitIgnoreSpec.from_lines(lines) if lines else None
        return self._specs[rel_dir]

    def _outer_specs(self) -> list[tuple[pathspec.GitIgnoreSpec, str]]:
        """Rules of the ancestors inside the git work tree, each with the root's path below it."""
        if self._outer is None:
            self._outer = []
            top = _git_top(self.root)
            if top is not None and top != self.root:
                below = self.root.relative_to(top).parts
                exclude = _read_lines(top / ".git" / "info" / "exclude", quiet=True)
                for depth in range(len(below)):
                    here = top.joinpath(*below[:depth])
                    lines = [line for name in IGNORE_FILES for line in _read_lines(here / name)]
                    if depth == 0:
                        lines = exclude + lines
                    if lines:
                        self._outer.append((pathspec.GitIgnoreSpec.from_lines(lines), "/".join(below[depth:])))
        return self._outer

    def verdict(self, rel: str, is_dir: bool) -> bool | None:
        """True if rel is ignored, False if a `!` rule re-includes it, None if no rule matches it."""
        parts = PurePosixPath(rel).parts
        verdict: bool | None = None
        suffix = "/" if is_dir else ""
        for outer, prefix in self._outer_specs():
            include = outer.check_file(f"{prefix}/{rel}{suffix}").include
            if include is not None:
                verdict = include
        # A deeper ignore file overrides a shallower one, like git.
        for depth in range(len(parts)):
            spec = self._spec("/".join(parts[:depth]))
            if spec is None:
                continue
            include = spec.check_file("/".join(parts[depth:]) + suffix).include
            if include is not None:
                verdict = include
        return verdict

    def matches(self, rel: str, is_dir: bool) -> bool:
        """Whether rel is ignored by the ignore files of its ancestors (not the ancestors)."""
        return bool(self.verdict(rel, is_dir))

    def reincluded(self, rel: str) -> bool:
        """Whether a `!` rule names rel itself: it is indexed even if it looks generated."""
        return self.verdict(rel, False) is False

    def skips_dir_name(self, name: str) -> bool:
        """Whether a directory with this name is skipped unless a rule re-includes it."""
        return name in self._skipped or name.endswith(".egg-info")

    def dir_rule(self, rel: str) -> bool | None:
        """True: skip the directory rel; False: a rule re-includes it; None: its contents decide."""
        name = PurePosixPath(rel).name
        if name in ALWAYS_SKIPPED_DIRS:
            return True
        verdict = self.verdict(rel, True)
        if verdict is not None:
            return verdict
        return True if self.skips_dir_name(name) else None

    def skips_dir(self, rel: str, names: Iterable[str] | None = None) -> bool:
        """Whether the directory rel (holding names, read from disk if None) is skipped."""
        rule = self.dir_rule(rel)
        if rule is not None:
            return rule
        if names is None:
            names = [n for n in ("pyvenv.cfg", *BUILT_DOCS_MARKERS) if (self.root / rel / n).exists()]
        return _generated_tree(names)

    def is_ignored(self, rel: str, is_dir: bool = False) -> bool:
        """Whether rel (POSIX, relative to root) or any directory above it is ignored."""
        parts = PurePosixPath(rel).parts
        if not parts or parts[0] == "..":
            return True
        for depth in range(1, len(parts) + 1):
            here = "/".join(parts[:depth])
            if depth < len(parts) or is_dir:
                if self.skips_dir(here):
                    return True
            elif self.matches(here, False):
                return True
        return False


def _read_lines(path: Path, quiet: bool = False) -> list[str]:
    try:
        return path.read_text(encoding="utf-8", errors="replace").splitlines()
    except FileNotFoundError:
        return []
    except OSError as exc:
        if not quiet:
            log.warning("cannot read %s: %s", path, exc)
        return []


def _git_top(root: Path) -> Path | None:
    """The enclosing git work tree of root (root itself included), or None."""
    for candidate in (root, *root.parents):
        if (candidate / ".git").exists():
            return candidate
    return None


def walk_files(rules: IgnoreRules, max_file_bytes: int = DEFAULT_MAX_FILE_BYTES, under: str = "") -> list[WalkedFile]:
    """All indexable files under rules.root (or its subdirectory under), sorted; no symlinks."""
    found: list[WalkedFile] = []
    if under and rules.is_ignored(under, is_dir=True):
        return found
    for rel, st in _walk(rules, under, rules.dir_rule(under) if under else None):
        language = language_for(rel)
        if language is None:
            continue
        junk = junk_name(rel)
        if junk is not None and not rules.reincluded(rel):
            log.debug("skipping %s: %s", rel, junk)
            continue
        if st.st_size > max_file_bytes:
            log.info("skipping %s: %d bytes is over the %d byte cap", rel, st.st_size, max_file_bytes)
            continue
        found.append(WalkedFile(rel, language, st.st_size, st.st_mtime_ns))
    found.sort(key=lambda f: f.rel)
    return found


def _generated_tree(names: Iterable[str]) -> bool:
    """A directory holding these names is a virtualenv under any name, or generated documentation."""
    return any(name == "pyvenv.cfg" or name in BUILT_DOCS_MARKERS for name in names)


def _walk(rules: IgnoreRules, rel_dir: str, rule: bool | None) -> Iterator[tuple[str, os.stat_result]]:
    """The files under rel_dir, whose IgnoreRules.dir_rule is `rule` (the caller has just asked)."""
    directory = rules.root / rel_dir
    try:
        entries = list(os.scandir(directory))
    except OSError as exc:
        log.warning("cannot list %s: %s", directory, exc)
        return
    if rel_dir and (rule is True or (rule is None and _generated_tree(e.name for e in entries))):
        log.debug("skipping %s: ignored, a virtualenv or built documentation", rel_dir)
        return
    for entry in entries:
        rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
        try:
            if entry.is_symlink():
                continue
            if entry.is_dir():
                child_rule = rules.dir_rule(rel)
                if not child_rule:
                    yield from _walk(rules, rel, child_rule)
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
