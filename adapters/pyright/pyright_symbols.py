"""What pyright's documentSymbol answer for a `.py` file is a function of, beside its text: the symbol cache's key.

Its document-symbol provider (languageService/documentSymbolProvider.ts, symbolIndexer.ts,
1.1.414) lists the declarations of the file's scopes from the binder, with kinds from
the declarations alone (getSymbolKind with no type evaluator) and ranges from the parse;
aliases (imports) are left out, and no `detail` is sent. The binder reads other files for
a wildcard import only (the names it binds, whose declarations can then hide a local one),
so such a file is not reused; what it reads besides the text is the execution environment
(Python version and platform decide which `sys.version_info`/`sys.platform` branches are
bound at all, `defineConstant` others), from the configuration files pyright logged
loading, else the version it logged assuming. Stubs (`.pyi`) bind otherwise by module name.
Same answers for 386 texts under other roots and alone, 15 of 300 changed by the environment
(bench/index/symbols_by_text.py, docs/benchmarks.md "Worktrees and re-clones").

pyright reports none of this but in its log as it starts, so the key is known only once
one process has said its version and its configuration (`observe`), and forgotten when
the process is replaced (`reset`).
"""

from __future__ import annotations

import hashlib
import re
import sys
import tomllib
from pathlib import Path
from typing import Any

import msgspec

# What pyright logs as it starts (information level), which its symbols by text depend on:
# its version, then per service each configuration file it loads (the root's, else the
# nearest ancestor's) and the Python version it assumes when the configuration names none.
_STARTING = re.compile(r"^Pyright language server (\S+) starting")
_LOADING = re.compile(r"^Loading (?:configuration|pyproject\.toml) file at (.+)$")
_ASSUMING = re.compile(r"^Assuming Python (?:version|platform) .+$")
# A wildcard import binds the names another module defines, in its order, into this one's scope:
# what this file's symbols are then depends on that file (seen: ctypes/_endian.py).
_WILDCARD_IMPORT = re.compile(r"\bimport[\s\\]*\*")
# Configuration that makes a file's environment depend on more than the file's text and the root.
_PER_FILE_CONFIG = (b"executionEnvironments", b"extends")


class PyrightSymbolKeys:
    """The key of one pyright instance's documentSymbol answers, from what its current process logged."""

    def __init__(self) -> None:
        self._version: str | None = None
        self._config_files: list[str] = []
        self._assumed: list[str] = []
        self._loaded_since_found = False
        # Per configuration file: (mtime_ns, size) -> what of it pyright reads, hashed (None: unusable).
        # Kept across processes: it is checked by stat.
        self._config_digests: dict[str, tuple[tuple[int, int], str | None]] = {}

    def reset(self) -> None:
        """A new pyright process has said nothing yet."""
        self._version = None
        self._config_files = []
        self._assumed = []
        self._loaded_since_found = False

    def observe(self, message: str, *, enumerated: bool) -> None:
        """One log line of pyright's; `enumerated`: it is the one that ends a folder's enumeration."""
        if (starting := _STARTING.match(message)) is not None:
            self._version = starting.group(1)
        elif (loading := _LOADING.match(message)) is not None or _ASSUMING.match(message):
            if self._loaded_since_found:
                # The configuration loaded again (a file changed): what follows replaces it.
                self._config_files, self._assumed, self._loaded_since_found = [], [], False
            if loading is not None:
                self._config_files.append(loading.group(1))
            else:
                self._assumed.append(message)
        elif enumerated:
            self._loaded_since_found = True

    def key(self, path: Path, text: str, launch: str, settings: dict[str, Any]) -> str | None:
        """The key of `path`'s symbols with `text`, under the launch fingerprint and settings; None: not reusable."""
        if self._version is None or not self._loaded_since_found or path.suffix != ".py":
            return None
        if _WILDCARD_IMPORT.search(text):
            return None
        configs = []
        for name in self._config_files:
            digest = self._config_digest(name)
            if digest is None:
                return None
            configs.append(digest)
        key = {
            "server": "pyright",
            "version": self._version,
            "launch": launch,
            "settings": settings,
            "platform": sys.platform,
            "configs": configs,
            "assumed": self._assumed,
        }
        return hashlib.sha256(msgspec.json.encode(key, order="sorted")).hexdigest()

    def _config_digest(self, name: str) -> str | None:
        """What pyright reads of one configuration file, hashed; None when it cannot be read or is per file."""
        try:
            stat = Path(name).stat()
        except OSError:
            return None
        stamp = (stat.st_mtime_ns, stat.st_size)
        known = self._config_digests.get(name)
        if known is not None and known[0] == stamp:
            return known[1]
        digest = _config_content(Path(name))
        self._config_digests[name] = (stamp, digest)
        return digest


def _config_content(path: Path) -> str | None:
    """The hash of pyrightconfig.json, or of pyproject.toml's [tool.pyright] table (the rest pyright ignores)."""
    try:
        data = path.read_bytes()
        if path.name == "pyproject.toml":
            table = tomllib.loads(data.decode("utf-8")).get("tool", {}).get("pyright", {})
            data = msgspec.json.encode(table, order="sorted")
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError, AttributeError):
        return None
    if any(word in data for word in _PER_FILE_CONFIG):
        return None
    return hashlib.sha256(data).hexdigest()
