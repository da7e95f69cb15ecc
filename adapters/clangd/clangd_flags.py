"""The compile flags clangd gives one file of a root, in a form that names the root by a placeholder.

clangd takes a file's command from the nearest `compile_commands.json` (in a directory or its
`build/`) or `compile_flags.txt` above it; a file a database does not list gets a command
interpolated from the database's others; with neither, its fallback command (seen with clangd
22.1.1's `--check`: `[the file's directory] clang -resource-dir=... -- FILE`). Every flag
mentions paths: with the root's path replaced by a placeholder, two roots holding the same
database give the same text. A path that leaves the root by a relative path names a
different file from each root (`-I../include`), and a response file's flags are not read
here: such a command has no key (None). Absolute paths outside the root are the same files
for every root of the machine: they count by name and by a stamp of what they hold now
(`Command.outside`, clangd_outside.py). Flags that make clang's driver choose other system
directories than the ones found once per clangd binary (another target, GCC installation or
C++ library) have no key, nor has a VFS overlay (it maps any path to any other).
"""

from __future__ import annotations

import json
import os
import re
import shlex
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

PLACEHOLDER = "\0ROOT"
DATABASE = "compile_commands.json"
FLAGS_FILE = "compile_flags.txt"
# The flags whose value is a path clang reads (headers, system roots, forced includes, module maps).
_PATH_FLAGS = (
    "-I",
    "-isystem",
    "-iquote",
    "-idirafter",
    "-include",
    "-imacros",
    "-include-pch",
    "-isysroot",
    "--sysroot",
    "-iprefix",
    "-iwithprefix",
    "-iwithprefixbefore",
    "-cxx-isystem",
    "-F",
    "-B",
    "--include-directory",
    "-fmodule-map-file",
    "-fprebuilt-module-path",
    "-ivfsoverlay",
)
_BY_LENGTH = sorted(_PATH_FLAGS, key=len, reverse=True)
# Forced includes: their targets join the files the root's header epoch covers.
FORCED_INCLUDES = ("-include", "-imacros", "-include-pch")
# Flags after which the driver searches other system directories than clangd_outside.search_list found.
_OTHER_SYSTEM = (
    "--target",
    "-target",
    "--gcc-toolchain",
    "--gcc-install-dir",
    "--gcc-triple",
    "-stdlib",
    "-m32",
    "-mx32",
    "-m16",
)


class NoKey(Exception):
    """The file's flags name something the key cannot (a path out of the root, a response file)."""


@dataclass(frozen=True, slots=True)
class Command:
    """One compile command as the key takes it: the directory and the arguments, root replaced."""

    directory: str
    arguments: tuple[str, ...]
    forced: tuple[str, ...]  # root-relative targets of -include/-imacros inside the root
    outside: tuple[str, ...] = ()  # absolute paths out of the root the flags name (stamped by the key)


def placeholder(text: str, root: Path) -> str:
    """`text` with the root's path (as a whole path component) replaced by the placeholder."""
    return re.sub(re.escape(str(root)) + r"(?=/|$|[\s\"',;:=])", PLACEHOLDER, text)


def command(directory: str, arguments: Iterable[str], root: Path) -> Command:
    """A command with its paths checked against the root (NoKey when one escapes it by a relative path)."""
    args = list(arguments)
    for arg in args[1:]:
        if arg in _OTHER_SYSTEM or arg.startswith(tuple(f"{flag}=" for flag in _OTHER_SYSTEM)):
            raise NoKey(f"{arg} selects other system include directories")
    forced: list[str] = []
    outside: list[str] = []
    for flag, value in _path_values(args):
        if value.startswith("@"):
            raise NoKey(f"response file {value}")
        target = Path(os.path.normpath(os.path.join(directory, value)))
        inside = target == root or target.is_relative_to(root)
        if not os.path.isabs(value) and not inside:
            raise NoKey(f"{flag} {value} leaves the root from {directory}")
        if flag in FORCED_INCLUDES and inside:
            forced.append(target.relative_to(root).as_posix())
        if not inside:
            if flag == "-ivfsoverlay":
                raise NoKey(f"VFS overlay {value}")
            outside.append(str(target))
    return Command(
        placeholder(directory, root),
        tuple(placeholder(a, root) for a in args),
        tuple(forced),
        tuple(sorted(set(outside))),
    )


def config_outside(text: str, directory: Path, root: Path) -> tuple[str, ...]:
    """The absolute paths out of the root a clangd configuration's flags name (`Add: [-I/opt/x]`).

    Read as a flat list of words, whatever YAML key holds them: a path read too widely only costs
    a stamp, and a flag that chooses other system directories (even under `Remove`) only a key.
    """
    words = [word for word in re.split(r"[\s,\[\]\"']+", text) if word]
    return command(str(directory), words, root).outside


def _path_values(args: list[str]) -> Iterable[tuple[str, str]]:
    """(flag, path) for every path-valued flag, joined (`-Ifoo`, `--sysroot=x`) or separate; `@file` too.

    Every one is taken as joined-or-separate, longest name first (`-include-pch` before
    `-include`): a flag read too widely only costs a key.
    """
    index = 0
    while index < len(args):
        arg = args[index]
        if arg.startswith("@"):
            yield "@", arg
        for flag in _BY_LENGTH:
            if arg == flag and index + 1 < len(args):
                yield flag, args[index + 1]
                index += 1
                break
            if arg.startswith(flag) and len(arg) > len(flag):
                yield flag, arg[len(flag) :].removeprefix("=")
                break
        index += 1


def database_commands(path: Path, root: Path) -> dict[str, list[Command]]:
    """A compile_commands.json's commands by the absolute, normalised path of their file (NoKey on any escape)."""
    try:
        entries = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise NoKey(f"{path}: {exc}") from exc
    if not isinstance(entries, list):
        raise NoKey(f"{path}: not a list")
    commands: dict[str, list[Command]] = {}
    for entry in entries:
        directory, file, args = _entry(entry)
        name = os.path.normpath(os.path.join(directory, file))
        commands.setdefault(name, []).append(command(directory, args, root))
    return commands


def _entry(entry: Any) -> tuple[str, str, list[str]]:
    if not isinstance(entry, dict):
        raise NoKey("a database entry is not an object")
    directory, file = entry.get("directory"), entry.get("file")
    if not isinstance(directory, str) or not isinstance(file, str) or not os.path.isabs(directory):
        raise NoKey("a database entry without an absolute directory or a file")
    args = entry.get("arguments")
    if args is None and isinstance(entry.get("command"), str):
        try:
            args = shlex.split(entry["command"])
        except ValueError as exc:
            raise NoKey(f"unparsable command: {exc}") from exc
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        raise NoKey("a database entry without arguments")
    return directory, file, args


def flags_file_command(path: Path, root: Path) -> Command:
    """compile_flags.txt: one flag a line, relative paths from its directory."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise NoKey(f"{path}: {exc}") from exc
    return command(str(path.parent), [line for line in (raw.strip() for raw in lines) if line], root)
