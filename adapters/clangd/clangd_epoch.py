"""A root's header epoch: one digest of every file of the root clangd could read for another file.

clangd's documentSymbol answer for a file is the file's AST: its names come through every
macro of every header it includes (measured with clangd 22.1.1 on two copies of libyaml and
brotli: the same answers in both roots, no path or URI in them; a `#define` added to
libyaml's yaml_private.h changed the answers of the two files whose declarations it renames
and of no other). Which headers a file includes is what clangd would have to say and does
not, so the epoch covers every file of the root a file could include:

- every file with a header's suffix (HEADER_SUFFIXES),
- every file with a suffix some C-family file of the root names in an `#include "..."`,
  `#import`, `#embed` or `__has_include` (`#include "tables.inc"`), read again in every file
  so covered; `<...>` (and `#include_next`) count only where an include directory can lie in
  the root: when the root holds a flags or configuration file, or one applies from outside
  it (the user's, the include path variables); with clangd's fallback flags only the
  system's directories are searched (`#include <cstdlib>` does not bring in every file
  without a suffix),
- every file at all once one of them includes through a macro (`#include FT_CONFIG_H`),

as (path relative to the root, sha256 of its bytes), found by its own walk of the root: the
indexer's walk leaves out what clangd still reads (ignored generated headers, `vendor/` and
`third_party/`, files over the size cap), and it hashes in its own order, after the files
that need the epoch. Only `.git` and clangd's own `.cache/clangd` are not walked. A symlink
that leaves the root by a relative path names another file from each root, so does an include
whose `..` leaves the root from its file's directory, or one with `..` that may be searched
in an include directory: no epoch (Escape).

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
    rb'^[ \t]*#[ \t]*(include|include_next|import|embed)[ \t]*([<"])([^>"\n]*)[>"]'
    rb'|__has_include(?:_next)?\s*\(\s*([<"])([^>"\n]*)[>"]',
    re.MULTILINE,
)
_COMPUTED = re.compile(rb"^[ \t]*#[ \t]*(?:include|include_next|import|embed)[ \t]*[A-Za-z_]", re.MULTILINE)
ALL = "*"  # in a suffix set: every file


class Escape(Exception):
    """A symlink or an include of the root may leave it by a relative path."""


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
    quoted: tuple[str, ...]  # targets of `#include "..."`, `__has_include("...")`
    angled: tuple[str, ...]  # targets of `#include <...>`, and of `#include_next` either way
    computed: bool  # an include through a macro


@dataclass(slots=True)
class Epoch:
    """One root's epoch and what it was computed from."""

    digest: str
    dirs: dict[str, int] = field(default_factory=dict)  # rel dir -> mtime_ns
    files: dict[str, Stamp] = field(default_factory=dict)  # every file read
    configs: dict[str, str] = field(default_factory=dict)  # rel path of a flag/config file -> sha256
    angled_from_outside: bool = False


class EpochKeeper:
    """The epoch of one root, checked by stat on each use and recomputed when something moved."""

    def __init__(self, root: Path) -> None:
        self.root = root
        # An include directory may lie in the root whatever the root holds (user configuration,
        # include path variables): `<...>` includes count.
        self.angled_from_outside = False
        self._epoch: Epoch | None = None
        self._reads: dict[str, _Read] = {}

    def current(self) -> Epoch:
        """The epoch as the root is now (Escape when a symlink or an include may leave it)."""
        epoch = self._epoch
        if epoch is None or epoch.angled_from_outside != self.angled_from_outside or not self._holds(epoch):
            epoch = self._epoch = self._compute()
        return epoch

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
        present = set(names)
        angled = self.angled_from_outside or any(r.rsplit("/", 1)[-1] in CONFIG_NAMES for r in names)
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
                    suffixes |= _included(rel, got, present, angled=angled)
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
        stamps = {rel: got.stamp for rel, got in reads.items()}
        return Epoch(digest.hexdigest(), dirs, stamps, configs, self.angled_from_outside)

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
                        raise Escape(f"{rel} -> {target}")
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
        quoted: list[str] = []
        angled: list[str] = []
        for match in _INCLUDE.finditer(data):
            target = (match.group(3) or match.group(5) or b"").decode("utf-8", "surrogateescape")
            if (match.group(2) or match.group(4)) == b'"' and match.group(1) != b"include_next":
                quoted.append(target)
            else:
                angled.append(target)
        computed = _COMPUTED.search(data) is not None
        return _Read(stamp, hashlib.sha256(data).hexdigest(), tuple(quoted), tuple(angled), computed)


def _included(rel: str, read: _Read, present: set[str], *, angled: bool) -> set[str]:
    """The suffixes a file's includes can reach in the root (ALL after a computed one); Escape if one may leave it."""
    found = {ALL} if read.computed else set()
    here = rel.rsplit("/", 1)[0] if "/" in rel else ""
    for target in read.quoted:
        found.add(_suffix(target))
        if ".." in target.split("/"):
            resolved = os.path.normpath(os.path.join(here, target))
            # Found beside its file, or searched in include directories, where `..` may leave the root.
            if resolved.startswith("..") or (angled and resolved not in present):
                raise Escape(f'{rel}: #include "{target}"')
    if angled:
        for target in read.angled:
            found.add(_suffix(target))
            if ".." in target.split("/"):
                raise Escape(f"{rel}: #include <{target}>")
    return found


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
