"""What clangd can read from outside the root by absolute path, stamped: the symbol key sees it change.

Headers outside the root by absolute path are the same files for every root of the machine, so
they do not make two roots' keys differ; but they change with the machine (an OS upgrade, a
reinstalled library can change a macro they define, and so a file's symbols) and the symbol cache
outlives the daemon. So the key carries a stamp of every directory outside the root a file's
include search can reach:

- clangd's own search list, found once per binary (and include path variables and user
  configuration) by `clangd --check` of a C and a C++ file with `-v` in a throwaway
  compile_flags.txt: the clang driver prints its `#include <...>` search list (seen with clangd
  22.1.1 here: its resource directory, /usr/local/include, /usr/include/x86_64-linux-gnu,
  /usr/include, libstdc++'s three for C++) and the directories it would have searched had they
  existed (stamped as absent: one created later is then seen);
- the absolute paths the command's path flags name outside the root (`-I/abs`, `-isystem /abs`,
  `-include /abs/x.h`, `--sysroot=/abs`, ...: clangd_flags.Command.outside), and those the
  flags of a `.clangd` above the file or of the user's config.yaml name (clangd_flags.config_outside).

A directory's stamp covers it and every directory below it, symlinked ones followed once each:
(path, st_mtime_ns, st_ino) of each. Package managers and `install` replace a header by writing a
new file and renaming it over the old one, which moves its directory's mtime. A header rewritten
in place (`cp` over an existing file, an editor saving in place) keeps its directory's mtime and is
MISSED; stamping every header's own stat instead cost about ten times more here (/usr/include:
8,789 files against 869 directories, about 30 ms a check against 3 ms). A file a flag names
(`-include /abs/x.h`) is stamped by its own stat, so an in-place rewrite of it is seen. A tree of
more than MAX_DIRS directories (`--sysroot=/`) has no stamp (NoKey).

Checking a stamp costs a stat of each of its directories; a tree is walked again only when one moved.
"""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from lensmux.adapters.clangd.clangd_flags import NoKey

MAX_DIRS = 20_000
# Launch flags under which the search list is not what a plain `--check` finds: the queried
# driver's own directories are asked per command's compiler.
_SEARCH_CHANGING_ARGS = ("--query-driver", "-query-driver")
_LISTED = re.compile(r"^ (/.*?)(?: \(framework directory\))?$")
_IGNORED = re.compile(r'^ignoring (?:nonexistent|duplicate) directory "(/[^"]*)"$')
_PROBES = {"probe.c": "int probe;\n", "probe.cc": "int probe;\n"}


@dataclass(frozen=True, slots=True)
class _Tree:
    """One stamped path: every directory below it with (mtime_ns, inode), or the file's own stat."""

    stats: dict[str, tuple[int, ...]]
    digest: str


def search_list(binary: str, environment: dict[str, str], args: list[str]) -> tuple[str, ...]:
    """The directories clangd's driver searches (or would, had they existed) for a C and a C++ file."""
    if any(arg.startswith(_SEARCH_CHANGING_ARGS) for arg in args):
        raise NoKey("--query-driver: the system's directories depend on each command's compiler")
    passed = [arg for arg in args if arg.lstrip("-").startswith("resource-dir")]
    found: set[str] = set()
    with tempfile.TemporaryDirectory(prefix="lensmux-clangd-search-") as scratch:
        (Path(scratch) / "compile_flags.txt").write_text("-v\n")
        for name, text in _PROBES.items():
            (Path(scratch) / name).write_text(text)
            try:
                done = subprocess.run(
                    [binary, *passed, f"--check={Path(scratch) / name}"],
                    capture_output=True,
                    text=True,
                    timeout=60,
                    env=environment,
                    cwd=scratch,
                    check=False,  # the list is printed before any diagnostic could fail the check
                )
            except (OSError, subprocess.SubprocessError) as exc:
                raise NoKey(f"{binary} --check: {exc}") from exc
            listed = [m.group(1) for line in done.stderr.splitlines() if (m := _LISTED.match(line))]
            if not listed:
                raise NoKey(f"{binary} --check printed no include search list")
            found.update(listed)
            found.update(m.group(1) for line in done.stderr.splitlines() if (m := _IGNORED.match(line)))
    # The scratch directory is the probe's own `"..."` directory, not a system one.
    real = {os.path.realpath(p) for p in found if not p.startswith(scratch)}
    # A directory below another listed one is in that one's stamp already (/usr/include/c++/12).
    return tuple(sorted(p for p in real if not any(p.startswith(f"{q.rstrip('/')}/") for q in real if q != p)))


class OutsideStamps:
    """Stamps of paths outside any root, checked by stat on each use and walked again when one moved."""

    def __init__(self) -> None:
        self._trees: dict[str, _Tree] = {}

    def stamp(self, path: str) -> str:
        """The digest of `path` as it is now (absent, a file, or a directory tree); NoKey when too large."""
        tree = self._trees.get(path)
        if tree is None or not _holds(tree):
            tree = self._trees[path] = _walk(path)
        return tree.digest

    def forget_except(self, paths: set[str]) -> None:
        """Drop the stamps of paths no longer asked for (a database lost an `-I`)."""
        for path in [p for p in self._trees if p not in paths]:
            del self._trees[path]


def _holds(tree: _Tree) -> bool:
    return all(_stat(path, len(stat)) == stat for path, stat in tree.stats.items())


def _stat(path: str, width: int) -> tuple[int, ...]:
    try:
        st = os.stat(path)
    except OSError:
        return ()
    if width == 2:
        return (st.st_mtime_ns, st.st_ino)
    return (st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino)


def _walk(top: str) -> _Tree:
    stats: dict[str, tuple[int, ...]] = {}
    try:
        st = os.stat(top)
    except OSError:
        stats[top] = ()  # absent: stamped, so its creation is seen
        return _Tree(stats, _digest(stats))
    if not os.path.isdir(top):
        stats[top] = (st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino)
        return _Tree(stats, _digest(stats))
    seen: set[tuple[int, int]] = set()
    stack = [top]
    while stack:
        directory = stack.pop()
        try:
            st = os.stat(directory)
        except OSError:
            stats[directory] = ()
            continue
        if (st.st_dev, st.st_ino) in seen:
            continue  # a symlink cycle or a second way to one directory
        seen.add((st.st_dev, st.st_ino))
        stats[directory] = (st.st_mtime_ns, st.st_ino)
        if len(stats) > MAX_DIRS:
            raise NoKey(f"{top} has more than {MAX_DIRS} directories to stamp")
        try:
            with os.scandir(directory) as entries:
                stack.extend(entry.path for entry in entries if entry.is_dir())
        except OSError:
            continue
    return _Tree(stats, _digest(stats))


def _digest(stats: dict[str, tuple[int, ...]]) -> str:
    digest = hashlib.sha256()
    for path in sorted(stats):
        digest.update(f"{path}\0{stats[path]}\n".encode("utf-8", "surrogateescape"))
    return digest.hexdigest()
