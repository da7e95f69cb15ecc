"""Daemon and server configuration: embedded TOML defaults merged with a user file.

Validation is msgspec's: a bad file yields `ConfigInvalid` naming the file, the
key path and what was expected, and the caller keeps its previous config.
"""

from __future__ import annotations

import hashlib
import importlib.resources
import os
import tomllib
from pathlib import Path
from typing import Any

import msgspec


class ConfigError(Exception):
    """Base of configuration problems."""


class ConfigInvalid(ConfigError):
    """A configuration file does not parse or does not validate."""


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
    root_markers: list[str] = []
    languages: dict[str, list[str]] = {}
    initialization_options: dict[str, Any] = {}
    settings: dict[str, Any] = {}
    env: dict[str, str] = {}
    timeouts: TimeoutConfig = msgspec.field(default_factory=TimeoutConfig)
    enabled: bool = True
    # `lensmux doctor` fails when a required server is missing, warns otherwise.
    required: bool = True

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


class CacheConfig(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """Response cache bounds."""

    max_bytes: int = 64 * 1024 * 1024
    enabled: bool = True


class BreakerConfig(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """Circuit breaker thresholds per instance."""

    failure_threshold: int = 5
    restart_limit: int = 5
    restart_window: float = 180.0
    cooldown: float = 30.0
    restart_backoff_start: float = 0.5
    restart_backoff_max: float = 30.0


class HttpConfig(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """The loopback HTTP search API."""

    enabled: bool = True
    port: int = 3458


class DaemonConfig(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """Daemon-wide settings."""

    idle_timeout: float = 300.0
    max_header_bytes: int = 8 * 1024
    max_body_bytes: int = 64 * 1024 * 1024
    client_queue_messages: int = 4096
    shutdown_grace: float = 5.0
    log_level: str = "info"
    cache: CacheConfig = msgspec.field(default_factory=CacheConfig)
    breaker: BreakerConfig = msgspec.field(default_factory=BreakerConfig)
    http: HttpConfig = msgspec.field(default_factory=HttpConfig)


class Config(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """The whole configuration."""

    daemon: DaemonConfig = msgspec.field(default_factory=DaemonConfig)
    servers: dict[str, ServerConfig] = {}
    source: str = "<embedded defaults>"

    def enabled_servers(self) -> dict[str, ServerConfig]:
        """Servers that get a socket."""
        return {name: s for name, s in self.servers.items() if s.enabled}


def default_config_path() -> Path:
    """`$XDG_CONFIG_HOME/lensmux/config.toml`."""
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "lensmux" / "config.toml"


def embedded_server_tables() -> dict[str, dict[str, Any]]:
    """The TOML tables shipped in lsp-configs/, by server name."""
    tables: dict[str, dict[str, Any]] = {}
    for entry in sorted(importlib.resources.files("lensmux.lsp_configs").iterdir(), key=str):
        if entry.name.endswith(".toml"):
            data = tomllib.loads(entry.read_text(encoding="utf-8"))
            tables[str(data.get("name", entry.name.removesuffix(".toml")))] = data
    return tables


def _normalise_server_table(name: str, table: dict[str, Any]) -> dict[str, Any]:
    out = dict(table)
    out.setdefault("name", name)
    timeouts = out.get("timeouts")
    if isinstance(timeouts, dict):
        # In TOML a method timeout reads naturally as `"textDocument/hover" = 5`;
        # fold those keys under `methods` for the struct.
        methods = {k: v for k, v in timeouts.items() if "/" in k}
        rest = {k: v for k, v in timeouts.items() if "/" not in k}
        rest["methods"] = {**rest.get("methods", {}), **methods}
        out["timeouts"] = rest
    return out


def deep_merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    """Merge `over` into a copy of `base`; tables merge, everything else replaces."""
    out = dict(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = value
    return out


def load_config(path: Path | None = None, *, explicit: bool = False) -> Config:
    """Load embedded defaults plus the user file at `path` (missing is fine unless explicit)."""
    path = path or default_config_path()
    user: dict[str, Any] = {}
    source = "<embedded defaults>"
    if path.exists():
        try:
            user = tomllib.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
            raise ConfigInvalid(f"{path}: {exc}") from None
        source = str(path)
    elif explicit:
        raise ConfigInvalid(f"{path}: no such file")
    servers = {name: _normalise_server_table(name, t) for name, t in embedded_server_tables().items()}
    user_servers = user.pop("servers", {})
    if not isinstance(user_servers, dict):
        raise ConfigInvalid(f"{source}: $.servers: expected a table")
    for name, table in user_servers.items():
        if not isinstance(table, dict):
            raise ConfigInvalid(f"{source}: $.servers.{name}: expected a table")
        servers[name] = deep_merge(servers.get(name, {}), _normalise_server_table(name, table))
    merged = {**user, "servers": servers, "source": source}
    try:
        return msgspec.convert(merged, Config)
    except msgspec.ValidationError as exc:
        raise ConfigInvalid(f"{source}: {exc}") from None
