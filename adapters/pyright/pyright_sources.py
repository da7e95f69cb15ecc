"""Which files pyright enumerates as a workspace's sources, read as pyright 1.1.414 reads them.

The daemon asks pyright to parse and bind each of its workspace files ahead of any question
(daemon/mux/lifecycle/bind_walk.py); a file pyright alone would never load must not be asked, or it
costs pyright the memory and CPU of a file nobody wanted. So the list is pyright's own
(analyzer/service.ts `_getConfigOptions`, `_ensureDefaultOptions`; analyzer/sourceEnumerator.ts;
common/uri/uriUtils.ts `getFileSpec`), as a language server on `root`:

- the configuration: `pyrightconfig.json` in the root, else `[tool.pyright]` of the root's
  `pyproject.toml`; a `pyproject.toml` without that table (or one that does not parse) hands over
  to the nearest `pyrightconfig.json`, else `pyproject.toml`, above the root; none: the
  `python.analysis.include`/`exclude` settings; `extends` chains are followed, base first;
- `include` and `exclude` globs resolve in the folder of the file that names them (`**` any
  folders, `*` and `?` within one name), an entry matches a path and everything below it, and an
  absolute entry is ignored; no include (or an empty one) is the root;
- pyright's default excludes (`**/node_modules`, `**/__pycache__`, `**/.*`, `**/__editable__.*`,
  from the root) are added to the user's, and a folder holding a virtual environment's markers is
  left out, as pyright's language server always does;
- `executionEnvironments` and `extraPaths` change how imports resolve, not which files are
  enumerated: files reached only through them are not workspace sources.

A `pyrightconfig.json` that does not parse is, for pyright, no configuration at all: the settings
and defaults apply (the caller logs it).
"""

from __future__ import annotations

import json
import os
import re
import stat
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# pathConsts.ts defaultExcludes, 1.1.414.
DEFAULT_EXCLUDES = ("**/node_modules", "**/__pycache__", "**/.*", "**/__editable__.*")
# sourceEnumerator.ts envMarkers: a folder holding one of these is a virtual environment.
_VENV_MARKERS = (("bin", "activate"), ("Scripts", "activate"), ("pyvenv.cfg",), ("conda-meta",))
_SOURCE = re.compile(r"\.pyi?$")
# What getWildcardSegmentRegexFragment escapes: anything but word characters, spaces and `/`
# (JavaScript's `\w` is ASCII's).
_RESERVED = re.compile(r"[^\w\s/]", re.ASCII)

Unreadable = Callable[[Path, str], None]


class ConfigUnreadable(Exception):
    """A configuration file pyright cannot parse (it then reads none from it)."""


@dataclass(frozen=True)
class FileSpec:
    """One include or exclude entry as pyright compiles it."""

    wildcard_root: Path
    regex: re.Pattern[str]
    deep: bool  # has a `**`: the search goes to any depth

    def matches(self, path: Path) -> bool:
        return self.regex.match(str(path)) is not None


def file_spec(folder: Path, spec: str) -> FileSpec:
    """uriUtils.ts getFileSpec: `^(pattern)($|/)`, the pattern anchored at `folder`."""
    parts = _components(folder, spec)
    pattern = ""
    for i, part in enumerate(parts):
        if part == "**":
            pattern += "(/[^/][^/]*)*?"
        else:
            pattern += ("/" if i > 0 else "") + _segment(part)
    root = Path("/")
    for part in parts[1:]:
        if part == "**" or "*" in part or "?" in part:
            break
        root = root / part
    return FileSpec(root, re.compile(f"^({pattern})($|/)"), "**" in spec.replace("\\", "/").split("/"))


def _components(folder: Path, spec: str) -> list[str]:
    """The absolute path's components, `.` and `..` reduced, the root's separator stripped ("")."""
    joined = os.path.normpath(os.path.join(folder, spec))
    return ["", *(p for p in joined.split("/") if p)]


def _segment(part: str) -> str:
    def one(match: re.Match[str]) -> str:
        char = match.group(0)
        return "[^/]*" if char == "*" else "[^/]" if char == "?" else re.escape(char)

    return _RESERVED.sub(one, part)


def source_files(root: Path, settings: dict[str, Any], unreadable: Unreadable) -> list[Path]:
    """The files pyright, as a language server on `root`, enumerates as sources (sorted)."""
    include, exclude = _specs(root, settings, unreadable)
    return sorted(_enumerate(include, exclude))


def _specs(root: Path, settings: dict[str, Any], unreadable: Unreadable) -> tuple[list[FileSpec], list[FileSpec]]:
    include: list[FileSpec] = []
    exclude: list[FileSpec] = []
    configs = _configs(root, unreadable)
    if configs:
        for folder, table in configs:
            include = _entries(folder, table.get("include"), include)
            exclude = _entries(folder, table.get("exclude"), exclude)
    else:
        # Without a configuration file, the settings' (absolute entries allowed, service.ts).
        include = _entries(root, settings.get("include"), [], absolute=True)
        exclude = _entries(root, settings.get("exclude"), [], absolute=True)
    if not include:
        include = [file_spec(root, ".")]
    known = {spec.regex.pattern for spec in exclude}
    exclude += [spec for spec in (file_spec(root, e) for e in DEFAULT_EXCLUDES) if spec.regex.pattern not in known]
    return include, exclude


def _entries(folder: Path, value: Any, before: list[FileSpec], *, absolute: bool = False) -> list[FileSpec]:
    """A config's `include` or `exclude`: replaces what a base config said when it is a list."""
    if not isinstance(value, list):
        return before
    return [file_spec(folder, v) for v in value if isinstance(v, str) and (absolute or not os.path.isabs(v))]


def _configs(root: Path, unreadable: Unreadable) -> list[tuple[Path, dict[str, Any]]]:
    """The configuration tables pyright applies, base first, each with its folder (service.ts)."""
    json_file = root / "pyrightconfig.json"
    if json_file.exists():
        return _chain(json_file, unreadable)
    toml_file = root / "pyproject.toml"
    if not toml_file.exists():
        return []
    while True:
        chain = _chain(toml_file, unreadable)
        if chain:
            return chain
        # A pyproject.toml without [tool.pyright]: the nearest configuration above it.
        above = toml_file.parent.parent
        found = None if above == toml_file.parent else _here_or_up(above)
        if found is None:
            return []
        if found.suffix == ".json":
            return _chain(found, unreadable)
        toml_file = found


def _here_or_up(folder: Path) -> Path | None:
    for name in ("pyrightconfig.json", "pyproject.toml"):
        for ancestor in (folder, *folder.parents):
            if (ancestor / name).exists():
                return ancestor / name
    return None


def _chain(first: Path, unreadable: Unreadable) -> list[tuple[Path, dict[str, Any]]]:
    chain: list[tuple[Path, dict[str, Any]]] = []
    seen: list[Path] = []
    current = first
    while True:
        seen.append(current)
        try:
            table = _read(current)
        except ConfigUnreadable as exc:
            unreadable(current, str(exc))
            table = None
        if table is None:
            return chain
        chain.insert(0, (current.parent, table))
        base = table.get("extends")
        if not isinstance(base, str):
            return chain
        current = Path(os.path.normpath(current.parent / base))
        if current in seen:
            return chain


def _read(path: Path) -> dict[str, Any] | None:
    """The file's pyright table; None for a pyproject.toml without one. Raises ConfigUnreadable."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigUnreadable(f"cannot be read: {exc}") from exc
    if path.suffix == ".toml":
        try:
            tool = tomllib.loads(text).get("tool")
        except tomllib.TOMLDecodeError as exc:
            raise ConfigUnreadable(f"is not valid TOML: {exc}") from exc
        table = tool.get("pyright") if isinstance(tool, dict) else None
        return table if isinstance(table, dict) else None
    try:
        value = json.loads(_plain_json(text))
    except json.JSONDecodeError as exc:
        raise ConfigUnreadable(f"is not valid JSON: {exc}") from exc
    # null is no configuration for pyright; another value one without include or exclude.
    return value if isinstance(value, dict) else {} if value else None


def _plain_json(text: str) -> str:
    """JSONC as pyright parses it (comments, trailing commas) made plain JSON."""
    tokens: list[str] = []  # strings whole, everything else a character at a time, comments dropped
    i, n = 0, len(text)
    while i < n:
        if text[i] == '"':
            end = i + 1
            while end < n and text[end] != '"':
                end += 2 if text[end] == "\\" else 1
            tokens.append(text[i : end + 1])
            i = end + 1
        elif text.startswith("//", i):
            end = text.find("\n", i)
            i = n if end < 0 else end
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            i = n if end < 0 else end + 2
            tokens.append(" ")
        else:
            tokens.append(text[i])
            i += 1
    out: list[str] = []
    for k, token in enumerate(tokens):
        if token == ",":
            after = k + 1
            while after < len(tokens) and tokens[after].isspace():
                after += 1
            if after < len(tokens) and tokens[after] in ("}", "]"):
                continue
        out.append(token)
    return "".join(out)


def _enumerate(include: list[FileSpec], exclude: list[FileSpec]) -> set[Path]:
    """sourceEnumerator.ts: each include's wildcard root, explored as far as its pattern reaches."""
    found: set[Path] = set()
    roots = [Path(os.path.realpath(spec.wildcard_root)) for spec in include]

    def excluded(path: Path) -> bool:
        return any(spec.matches(path) for spec in exclude)

    for spec in include:
        if excluded(spec.wildcard_root):
            continue
        try:
            mode = spec.wildcard_root.stat().st_mode
        except OSError:
            continue
        if stat.S_ISREG(mode):
            found.add(spec.wildcard_root)
            continue
        if not stat.S_ISDIR(mode):
            continue
        seen: set[str] = set()
        stack = [spec.wildcard_root]
        while stack:
            folder = stack.pop()
            real = os.path.realpath(folder)
            if real in seen or not any(real == str(r) or real.startswith(f"{r}/") for r in roots):
                continue
            seen.add(real)
            if any(folder.joinpath(*marker).exists() for marker in _VENV_MARKERS):
                continue
            files, folders = _entries_of(folder)
            found.update(f for f in files if spec.matches(f) and not excluded(f) and _SOURCE.search(str(f)))
            # In name order, as pyright: which of two paths to one folder is walked depends on it.
            stack.extend(reversed([d for d in folders if (spec.matches(d) or spec.deep) and not excluded(d)]))
    return found


def _entries_of(folder: Path) -> tuple[list[Path], list[Path]]:
    """The folder's files and folders, symbolic links taken for what they point at (broken ones dropped)."""
    files: list[Path] = []
    folders: list[Path] = []
    try:
        entries = sorted(os.scandir(folder), key=lambda entry: entry.name)
    except OSError:
        return files, folders
    for entry in entries:
        try:
            if entry.is_file():
                files.append(folder / entry.name)
            elif entry.is_dir():
                folders.append(folder / entry.name)
        except OSError:
            continue
    return files, folders
