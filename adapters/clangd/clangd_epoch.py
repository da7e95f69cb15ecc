"""A root's header epoch: one digest of every file of the root clangd could read for another file.

clangd's documentSymbol answer for a file is the file's AST: its names come through every
macro of every header it includes (measured with clangd 22.1.1 on two copies of libyaml and
brotli: the same answers in both roots, no path or URI in them; a `#define` added to
libyaml's yaml_private.h changed the answers of the two files whose declarations it renames
and of no other). Which headers a file includes is what clangd would have to say and does
not, so the epoch covers every file of the root a file could include:

- every file with a header's suffix (HEADER_SUFFIXES),
- every file with a suffix some C-family file of the root names in an `#include`, `#import`,
  `#include_next`, `#embed` or `__has_include` (`#include "tables.inc"`, `#include <vector>`
  brings in the files without a suffix), read again in every file so covered,
- every file at all once one of them includes through a macro (`#include FT_CONFIG_H`),

as (path relative to the root, sha256 of its bytes), found by its own walk of the root: the
indexer's walk leaves out what clangd still reads (ignored generated headers, `vendor/` and
`third_party/`, files over the size cap), and it hashes in its own order, after the files
that need the epoch. Only `.git` and clangd's own `.cache/clangd` are not walked. A symlink
that leaves the root by a relative path names another file from each root: no epoch.

A worktree at the same commit has the same epoch; any such file that differs makes every
C/C++ file ask clangd again (correct, only slower). Checking that an epoch still holds costs
a stat of each directory and each covered file; contents are read again only when a stat moved.
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

HEADER_SUFFIXES = frozenset(
    {".h", ".hh", ".hpp", ".hxx", ".h++", ".inl", ".inc", ".def", ".ipp", ".tcc", ".tpp", ".cuh", ".modulemap"}
)
# Files whose own includes say which other suffixes can be read.
SOURCE_SUFFIXES = frozenset({".c", ".cc", ".cpp", ".cxx", ".c++", ".cp", ".m", ".mm", ".cu"}) | HEADER_SUFFIXES
# Flag and configuration files: their texts are part of the key, and they are watched like headers.
CONFIG_NAMES = frozenset({".clangd", "compile_commands.json", "compile_flags.txt"})
_SKIPPED = (".git", ".cache/clangd")
_INCLUDE = re.compile(
    rb'^[ \t]*#[ \t]*(?:include|include_next|import|embed)[ \t]*([<"])([^>"\n]*)[>"]'
    rb'|__has_include(?:_next)?\s*\(\s*[<"]([^>"\n]*)[>"]',
    re.MULTILINE,
)
_COMPUTED = re.compile(rb"^[ \t]*#[ \t]*(?:include|include_next|import|embed)[ \t]*[A-Za-z_]", re.MULTILINE)
ALL = "*"  # in a suffix set: every file


class EscapingLink(Exception):
    """A symlink in the root leaves it by a relative path."""


@dataclass(frozen=True, slots=True)
class Stamp:
    """What a stat says of a file; a file whose stamp did not move is not read again."""

    mtime_ns: int
    ctime_ns: int
    size: int
    inode: int


@dataclass(slots=True)
class _Read:
    stamp: Stamp
    sha256: str
    includes: frozenset[str]  # suffixes this file's includes name; ALL for a computed include


@dataclass(slots=True)
class Epoch:
    """One root's epoch and what it was computed from."""

    digest: str
    dirs: dict[str, int] = field(default_factory=dict)  # rel dir -> mtime_ns
    files: dict[str, Stamp] = field(default_factory=dict)  # every file read
    configs: dict[str, str] = field(default_factory=dict)  # rel path of a flag/config file -> sha256


class EpochKeeper:
    """The epoch of one root, checked by stat on each use and recomputed when something moved."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._epoch: Epoch | None = None
        self._reads: dict[str, _Read] = {}

    def current(self) -> Epoch:
        """The epoch as the root is now (EscapingLink when a symlink leaves it)."""
        if self._epoch is None or not self._holds(self._epoch):
            self._epoch = self._compute()
        return self._epoch

    def _holds(self, epoch: Epoch) -> bool:
        for rel, mtime in epoch.dirs.items():
            try:
                if os.stat(self.root / rel).st_mtime_ns != mtime:
                    return False
            except OSError:
                return False
        return all(_stamp(self.root / rel) == stamp for rel, stamp in epoch.files.items())

    def _compute(self) -> Epoch:
        dirs: dict[str, int] = {}
        names: list[str] = []
        links: list[str] = []
        self._walk("", dirs, names, links)
        reads: dict[str, _Read] = {}

        def read(rel: str) -> _Read | None:
            if rel not in reads:
                got = self._read(rel)
                if got is None:
                    return None
                reads[rel] = got
            return reads[rel]

        suffixes = set(HEADER_SUFFIXES)
        # Sources name the suffixes they include; a file of a newly named suffix may name more.
        scanned: set[str] = set()
        while True:
            wanted = [r for r in names if r not in scanned and (_suffix(r) in SOURCE_SUFFIXES or _covered(r, suffixes))]
            if not wanted:
                break
            for rel in wanted:
                scanned.add(rel)
                got = read(rel)
                if got is not None:
                    suffixes |= got.includes
        covered = sorted(r for r in names if _covered(r, suffixes))
        digest = hashlib.sha256()
        for rel in covered:
            got = read(rel)
            digest.update(f"{rel}\0{got.sha256 if got else '-'}\n".encode("utf-8", "surrogateescape"))
        for link in links:
            digest.update(f"{link}\n".encode("utf-8", "surrogateescape"))
        configs = {}
        for rel in names:
            if rel.rsplit("/", 1)[-1] in CONFIG_NAMES and (got := read(rel)) is not None:
                configs[rel] = got.sha256
        self._reads = reads
        return Epoch(digest.hexdigest(), dirs, {rel: got.stamp for rel, got in reads.items()}, configs)

    def _walk(self, rel_dir: str, dirs: dict[str, int], names: list[str], links: list[str]) -> None:
        directory = self.root / rel_dir if rel_dir else self.root
        dirs[rel_dir] = os.stat(directory).st_mtime_ns
        with os.scandir(directory) as entries:
            for entry in entries:
                rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
                if rel in _SKIPPED:
                    continue
                if entry.is_symlink():
                    target = os.readlink(entry.path)
                    resolved = Path(os.path.normpath(os.path.join(directory, target)))
                    if not os.path.isabs(target) and not resolved.is_relative_to(self.root):
                        raise EscapingLink(f"{rel} -> {target}")
                    links.append(f"{rel} -> {target}")
                    if entry.is_file():
                        names.append(rel)
                elif entry.is_dir():
                    self._walk(rel, dirs, names, links)
                elif entry.is_file():
                    names.append(rel)

    def _read(self, rel: str) -> _Read | None:
        path = self.root / rel
        stamp = _stamp(path)
        if stamp is None:
            return None
        known = self._reads.get(rel)
        if known is not None and known.stamp == stamp:
            return known
        try:
            data = path.read_bytes()
        except OSError:
            return None
        # Any file read may be included, and then what it includes is read too.
        includes: set[str] = {ALL} if _COMPUTED.search(data) else set()
        for match in _INCLUDE.finditer(data):
            target = (match.group(2) or match.group(3) or b"").decode("utf-8", "surrogateescape")
            includes.add(_suffix(target))
        return _Read(stamp, hashlib.sha256(data).hexdigest(), frozenset(includes))


def _covered(rel: str, suffixes: set[str]) -> bool:
    return ALL in suffixes or _suffix(rel) in suffixes


def _suffix(rel: str) -> str:
    """The lower-cased suffix of the last path component ("" for none; `.clangd` counts as none)."""
    name = rel.rsplit("/", 1)[-1]
    dot = name.rfind(".")
    return name[dot:].lower() if dot > 0 else ""


def _stamp(path: Path) -> Stamp | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return Stamp(st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino)
