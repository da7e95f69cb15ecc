"""What clangd's documentSymbol answer for a file is a function of, beside its text: the symbol cache's key.

The answer is the file's AST (names, kinds, `detail` as written, ranges in the file; seen with
clangd 22.1.1: no path or URI of the root in it, the same for 121 C files and headers of
libyaml and brotli copied into two roots). That AST depends on:

- clangd itself: its `--version` line and the launch fingerprint (arguments, environment,
  initialization options), and the include path variables clang reads (`CPATH`, ...);
- the file's compile command (clangd_flags.py: root replaced by a placeholder; none when a
  path leaves the root by a relative path, or for a response file), and the file's path
  relative to the root (the fallback command runs in the file's directory, a database's
  command for a file it does not list is interpolated from its path);
- the configuration that applies: every `.clangd` of the root above the file and the user's
  `clangd/config.yaml`, as text (none when one can match paths or names another database, or a
  `.clangd` or flags file lies above the root: it would apply to one root by its location);
- every file of the root it could include: the root's header epoch (clangd_epoch.py);
- every directory out of the root by absolute path its include search can reach, as it is now:
  clangd's system directories (found once per binary and include path variables) for every
  file, and those the file's command and configuration name (`-I/abs`, ...) for the file
  (clangd_outside.py: a stamp of their directories' mtimes, checked by stat; the symbol cache
  outlives the daemon, and an OS upgrade or a reinstalled library changes what they define).

None of these is reported by clangd, so each is read from the disk, rechecked by stat:
`refresh` runs in a worker thread before `key`, before the request (a check begun in the last
second serves: it is only a lookup) and after the answer (a check begun after the answer
arrived: an answer is stored only if the key did not move meanwhile). Concurrent preparers
share one check, so a root's checks cost at most about one at a time however many files ask.
"""

from __future__ import annotations

import hashlib
import logging
import os
import subprocess
import threading
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

import msgspec

from lensmux.adapters.clangd.clangd_epoch import HEADER_SUFFIXES, Epoch, EpochKeeper, Escape
from lensmux.adapters.clangd.clangd_flags import (
    DATABASE,
    FLAGS_FILE,
    Command,
    NoKey,
    config_outside,
    database_commands,
    flags_file_command,
    placeholder,
)
from lensmux.adapters.clangd.clangd_outside import OutsideStamps, search_list

log = logging.getLogger(__name__)

# Environment variables clang reads include directories from.
INCLUDE_ENV = ("CPATH", "C_INCLUDE_PATH", "CPLUS_INCLUDE_PATH", "OBJC_INCLUDE_PATH", "OBJCPLUS_INCLUDE_PATH")
# Configuration that makes a file's flags depend on its location or on another database.
_LOCATED_CONFIG = ("PathMatch", "PathExclude", "CompilationDatabase")
_OUTSIDE_CONFIG = (".clangd", DATABASE, f"build/{DATABASE}", FLAGS_FILE)


class ClangdSymbolKeys:
    """The key of one clangd instance's documentSymbol answers, by file and text."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._keepers: dict[Path, EpochKeeper] = {}
        self._versions: dict[tuple[str, int], str | None] = {}
        self._databases: dict[tuple[str, str], dict[str, list[Command]] | NoKey] = {}
        # clangd's include search list by (binary, its mtime, the include variables, the user's configuration).
        self._search_lists: dict[tuple[object, ...], tuple[str, ...]] = {}
        self._outside = OutsideStamps()
        # As of the last refresh: (root, epoch, what applies to every file, the stamp of each
        # absolute path out of the root the root's commands name) or None when nothing can be keyed.
        self._state: tuple[Path, Epoch, dict[str, object], dict[str, str]] | None = None
        # When (time.monotonic()) the last refresh of the state's root began.
        self._checked_at = float("-inf")
        # Key material of each flags or configuration file as of the state (by a tag and its path),
        # or why it has none: the same for every file under it until the next refresh, which clears it.
        self._material: dict[tuple[str, str], object | NoKey] = {}

    def refresh(self, root: Path, since: float, binary: str, environment: dict[str, str], args: list[str]) -> None:
        """Check (and recompute where a stat moved) what keys depend on, unless a check of `root` began at
        or after `since`; blocking, for a worker thread. Concurrent callers share one check."""
        with self._lock:
            if self._checked_at >= since and self._state is not None and self._state[0] == root:
                return
            began = time.monotonic()
            self._material = {}
            try:
                self._state = self._refreshed(root, binary, environment, args)
                self._checked_at = began
            except (NoKey, Escape, OSError) as exc:
                log.debug("clangd symbols of %s are not kept by text: %s", root, exc)
                self._state = None
                self._checked_at = float("-inf")

    def _refreshed(
        self, root: Path, binary: str, environment: dict[str, str], args: list[str]
    ) -> tuple[Path, Epoch, dict[str, object], dict[str, str]]:
        if any(arg.lstrip("-").startswith("compile-commands-dir") for arg in args):
            raise NoKey("--compile-commands-dir names a database outside the root")
        for ancestor in root.parents:
            for name in _OUTSIDE_CONFIG:
                if (ancestor / name).exists():
                    raise NoKey(f"{ancestor / name} applies from above the root")
        includes = {}
        for name in INCLUDE_ENV:
            value = environment.get(name)
            if value is not None:
                if any(part and not os.path.isabs(part) for part in value.split(os.pathsep)):
                    raise NoKey(f"{name} has a relative directory")
                includes[name] = value
        keeper = self._keepers.get(root)
        if keeper is None:
            keeper = self._keepers[root] = EpochKeeper(root)
        user_config = _user_config(environment)
        # An include directory these name may lie in the root: `<...>` includes count in the epoch.
        keeper.angled_from_outside = bool(includes) or user_config is not None
        epoch = keeper.current()
        named: set[str] = set()
        for where, sha256 in epoch.configs.items():
            name = where.rsplit("/", 1)[-1]
            try:
                if name == DATABASE:
                    # Parsed here, in the worker thread.
                    commands = [c for cs in self._database(root, where, sha256).values() for c in cs]
                elif name == FLAGS_FILE:
                    commands = [flags_file_command(root / where, root)]
                else:
                    text = (root / where).read_text(encoding="utf-8", errors="replace")
                    named.update(config_outside(text, (root / where).parent, root))
                    continue
            except (NoKey, OSError):
                continue  # its files have no key
            named.update(path for c in commands for path in c.outside)
        user_outside = () if user_config is None else config_outside(user_config, root, root)
        named.update(user_outside)
        version = self._version(binary)
        searched = self._search_list(binary, environment, args, (includes, user_config))
        system = [(path, self._outside.stamp(path)) for path in searched]
        system += [(path, self._outside.stamp(path)) for path in user_outside]
        outside: dict[str, str] = {}
        for path in sorted(named):
            try:
                outside[path] = self._outside.stamp(path)
            except NoKey as exc:
                log.debug("clangd symbols naming %s are not kept by text: %s", path, exc)
        self._outside.forget_except(set(searched) | named)
        common: dict[str, object] = {
            "server": "clangd",
            "version": version,
            "include_env": includes,
            "user_config": user_config,
            "system": system,
        }
        return root, epoch, common, outside

    def key(self, path: Path, text: str) -> str | None:
        """The key for `path` as of the last refresh; None when its answer depends on more than it can name."""
        del text  # the symbol source adds the text's sha256
        with self._lock:
            state = self._state
            if state is None:
                return None
            root, epoch, common, outside = state
            if not path.is_relative_to(root):
                return None
            rel = path.relative_to(root).as_posix()
            try:
                flags = self._flags(root, rel, epoch, outside)
                configs = self._clangd_configs(root, rel, epoch, outside)
            except NoKey as exc:
                log.debug("clangd symbols of %s are not kept by text: %s", rel, exc)
                return None
        key = {**common, "file": rel, "flags": flags, "configs": configs, "epoch": epoch.digest}
        return hashlib.sha256(msgspec.json.encode(key, order="sorted")).hexdigest()

    def _flags(self, root: Path, rel: str, epoch: Epoch, outside: dict[str, str]) -> object:
        """The command clangd takes for the file: its database's entries, the interpolation's inputs, or flags."""
        parts = rel.split("/")[:-1]
        for depth in range(len(parts), -1, -1):
            here = "/".join(parts[:depth])
            prefix = f"{here}/" if here else ""
            found = [n for n in (DATABASE, f"build/{DATABASE}", FLAGS_FILE) if prefix + n in epoch.configs]
            if not found:
                continue
            chosen: list[object] = []
            for name in found:
                where = prefix + name
                if name == FLAGS_FILE:
                    chosen.append(self._memo("flags", where, partial(_flags_file, root, where, outside)))
                    continue
                commands = self._database(root, where, epoch.configs[where])
                own = commands.get(os.path.normpath(root / rel))
                if own is not None:
                    chosen.append((where, _checked(own, outside)))
                else:
                    # Interpolated from the database's other entries, by path: all of them count.
                    chosen.append(
                        self._memo("interpolated", where, partial(_interpolated, root, where, commands, outside))
                    )
            return chosen
        return "fallback"

    def _memo(self, tag: str, where: str, make: Callable[[], object]) -> object:
        """`make()` for one flags or configuration file, once per refresh (NoKey raised again for each file)."""
        made = self._material.get((tag, where))
        if made is None:
            try:
                made = make()
            except NoKey as exc:
                made = exc
            self._material[(tag, where)] = made
        if isinstance(made, NoKey):
            raise NoKey(str(made))
        return made

    def _clangd_configs(self, root: Path, rel: str, epoch: Epoch, outside: dict[str, str]) -> list[object]:
        """Every `.clangd` of the root above the file, outermost first, by text (root replaced) and the
        stamps of the absolute paths out of the root its flags name."""
        parts = rel.split("/")[:-1]
        found: list[object] = []
        for depth in range(len(parts) + 1):
            here = "/".join(parts[:depth])
            where = f"{here}/.clangd" if here else ".clangd"
            if where in epoch.configs:
                found.append(self._memo("clangd", where, partial(_clangd_config, root, here, where, outside)))
        return found

    def _database(self, root: Path, where: str, sha256: str) -> dict[str, list[Command]]:
        cached = self._databases.get((str(root / where), sha256))
        if cached is None:
            try:
                cached = database_commands(root / where, root)
            except NoKey as exc:
                cached = exc
            self._databases[(str(root / where), sha256)] = cached
        if isinstance(cached, NoKey):
            # A new exception each time: raising the kept one would grow its traceback at every file.
            raise NoKey(str(cached))
        return cached

    def _search_list(
        self, binary: str, environment: dict[str, str], args: list[str], config: tuple[object, ...]
    ) -> tuple[str, ...]:
        """clangd's include search list, once per binary, launch flags, include variables and user configuration."""
        try:
            stamp = (binary, os.stat(binary).st_mtime_ns, tuple(args), msgspec.json.encode(config, order="sorted"))
        except OSError as exc:
            raise NoKey(f"{binary}: {exc}") from exc
        if stamp not in self._search_lists:
            self._search_lists[stamp] = search_list(binary, environment, args)
        return self._search_lists[stamp]

    def _version(self, binary: str) -> str | None:
        try:
            stamp = (binary, os.stat(binary).st_mtime_ns)
        except OSError as exc:
            raise NoKey(f"{binary}: {exc}") from exc
        if stamp not in self._versions:
            try:
                done = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=30, check=True)
                self._versions[stamp] = done.stdout.strip()
            except (OSError, subprocess.SubprocessError) as exc:
                raise NoKey(f"{binary} --version: {exc}") from exc
        version = self._versions[stamp]
        if not version:
            raise NoKey(f"{binary} --version said nothing")
        return version


def _checked(commands: list[Command], outside: dict[str, str]) -> list[object]:
    """Commands as key material, with the stamps of the paths out of the root they name; a forced
    include of the root that the epoch may not cover, or a path out of it without a stamp, has no key."""
    for command in commands:
        for target in command.forced:
            if Path(target).suffix.lower() not in HEADER_SUFFIXES:
                raise NoKey(f"forced include {target} is not a header the epoch covers")
        for path in command.outside:
            if path not in outside:
                raise NoKey(f"{path} has no stamp")
    return [[c.directory, list(c.arguments), [outside[p] for p in c.outside]] for c in commands]


def _flags_file(root: Path, where: str, outside: dict[str, str]) -> object:
    """A compile_flags.txt as key material: the one command it gives every file under it."""
    return (where, _checked([flags_file_command(root / where, root)], outside))


def _interpolated(root: Path, where: str, commands: dict[str, list[Command]], outside: dict[str, str]) -> object:
    """A database as key material for a file it does not list: clangd interpolates from all its entries."""
    return (where, "interpolated", {placeholder(f, root): _checked(c, outside) for f, c in commands.items()})


def _clangd_config(root: Path, here: str, where: str, outside: dict[str, str]) -> list[object]:
    """One `.clangd` of the root as key material: its text (root replaced) and the stamps of the
    absolute paths out of the root its flags name."""
    try:
        text = (root / where).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise NoKey(f"{where}: {exc}") from exc
    if any(word in text for word in _LOCATED_CONFIG) or ".." in text:
        raise NoKey(f"{where} matches paths, names a database or a path out of its directory")
    named = config_outside(text, (root / where).parent, root)
    if any(path not in outside for path in named):
        raise NoKey(f"{where} names a path out of the root without a stamp")
    return [here, placeholder(text, root), [outside[path] for path in named]]


def _user_config(environment: dict[str, str]) -> str | None:
    """The user's clangd/config.yaml as text (None without one); NoKey when it matches paths."""
    base = environment.get("XDG_CONFIG_HOME") or os.path.join(environment.get("HOME", "~"), ".config")
    path = Path(base) / "clangd" / "config.yaml"
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise NoKey(f"{path}: {exc}") from exc
    if any(word in text for word in _LOCATED_CONFIG):
        raise NoKey(f"{path} matches paths or names a database")
    return text
