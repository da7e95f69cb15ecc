"""What defines one language server: how to start it, what it serves, its timeouts.

The daemon's configuration loader builds these from `lsp-configs/` and the
user's file; adapters read them. They live here so that adapters need nothing
of the daemon.
"""

from __future__ import annotations

import hashlib
from typing import Annotated, Any

import msgspec


class TimeoutConfig(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """Per-method request timeouts in seconds; `default` covers the rest."""

    default: float = 30.0
    methods: dict[str, float] = {}

    def for_method(self, method: str) -> float:
        """The timeout for one method."""
        return self.methods.get(method, self.default)


class ServerConfig(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """One language server: how to start it and what it serves."""

    name: str
    command: str
    args: list[str] = []
    adapter: str = "generic"
    # A client's root maps to the nearest ancestor holding one of these, which clients below it share;
    # none: the instance root is the root the client asked for (for servers whose answers depend on it).
    root_markers: list[str] = []
    languages: dict[str, list[str]] = {}
    initialization_options: dict[str, Any] = {}
    settings: dict[str, Any] = {}
    env: dict[str, str] = {}
    timeouts: TimeoutConfig = msgspec.field(default_factory=TimeoutConfig)
    enabled: bool = True
    # `lensmux doctor` fails when a required server is missing, warns otherwise.
    required: bool = True
    # Serve pull diagnostics (textDocument/diagnostic) to clients that declare them. Off by default:
    # clangd alone pushes to every tested editor profile, pyright to all but VS Code's.
    pull_diagnostics: bool = False
    # Ask the server, file by file in quiet moments once it has discovered its workspace, the
    # adapter's `bind_file_request` (pyright parses and binds each workspace file), so that a
    # first cross-file question pays only for type evaluation (daemon/mux/lifecycle/bind_walk.py).
    # Costs the server's memory for the parse trees and binder tables.
    prebind: bool = True
    # At most this many files of one server process are bound (the walk's and the index run's), in
    # path order; the walk stops there (`lensmux status`: `prebind: 1000/12000 files (cap)`). Each
    # bound file keeps its parse tree and binder tables in the server's memory for the process's
    # life: with pyright 1.1.414, 0.6-0.9 MiB per file of 12 KB, 1.6-2.2 per file of 21 KB
    # (bench/mux/bind_walk_memory.py, docs/benchmarks.md), so 1000 stay well under
    # `[daemon.memory] server_limit_mb`'s 4096, past which the server is recycled and would bind
    # them all again. 0: none.
    prebind_max_files: Annotated[int, msgspec.Meta(ge=0)] = 1000
    # Recycle the server past this resident memory (MiB); None uses `[daemon.memory] server_limit_mb`.
    memory_limit_mb: int | None = None

    def fingerprint(self) -> str:
        """Hash of everything that changes the running process; keys instances."""
        launch = {
            "command": self.command,
            "args": self.args,
            "adapter": self.adapter,
            "init": self.initialization_options,
            "env": self.env,
        }
        return hashlib.sha256(msgspec.json.encode(launch, order="sorted")).hexdigest()[:12]

    def language_of(self, path: str) -> str | None:
        """The language id for a file name, by extension."""
        lower = path.lower()
        for lang, exts in self.languages.items():
            if any(lower.endswith(ext) for ext in exts):
                return lang
        return None
