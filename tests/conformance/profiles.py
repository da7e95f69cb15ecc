"""Client capability profiles (profiles/*.json), editors' and agents', and the `initialize` params they make."""

from __future__ import annotations

import copy
import json
import os
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any, Literal

from support.lspclient import path_uri

PROFILE_DIR = Path(__file__).with_name("profiles")

Kind = Literal["editor", "agent"]
# Which root members a client sends; workspaceFolders named by the root's basename (as most
# clients do), by its whole path, or not sent at all.
DEFAULT_ROOT: dict[str, Any] = {"rootPath": True, "rootUri": True, "workspaceFolders": "basename"}


@dataclass(frozen=True)
class ReadySignal:
    """What an agent waits for after `initialized` before its first request (any one of them)."""

    log: str | None = None  # a regex a window/logMessage text must match
    notifications: tuple[str, ...] = ()  # notifications whose arrival means ready
    quiescent: bool = False  # experimental/serverStatus with quiescent: true
    sleep: float = 0.0  # no signal: a fixed pause instead
    timeout: float = 60.0

    @property
    def waits(self) -> bool:
        """Whether the client waits for something the server says (not merely a pause)."""
        return self.log is not None or bool(self.notifications) or self.quiescent


@dataclass(frozen=True)
class Habits:
    """How an agent uses a session, as its source shows (profiles/README.md)."""

    ready: dict[str, ReadySignal] = field(default_factory=dict)  # per server; absent: waits for nothing
    opens: Literal["around", "keep", "never"] = "never"  # didOpen around each request, once and kept, or never
    open_version: int = 1
    language_id: dict[str, str] = field(default_factory=dict)  # per server, when not the usual one
    initialized_twice: bool = False
    configuration_answer: Literal["per-item", "one-empty-object"] = "per-item"

    def ready_for(self, server: str) -> ReadySignal:
        """The ready signal for server (nothing to wait for if the profile names none)."""
        return self.ready.get(server, ReadySignal(timeout=0))


@dataclass(frozen=True)
class Profile:
    """One client as a server sees it: what it sends in `initialize`, per server, and its habits."""

    name: str
    editor: str
    source: str
    sends_process_id: bool
    initialize: dict[str, Any]
    per_server: dict[str, Any]
    kind: Kind = "editor"
    servers: tuple[str, ...] | None = None  # the servers this client is set up for (None: any)
    root: dict[str, Any] = field(default_factory=lambda: dict(DEFAULT_ROOT))
    habits: Habits = field(default_factory=Habits)

    def capabilities(self, server: str) -> dict[str, Any]:
        """The capabilities this editor declares to `server` (with its per-server setup)."""
        caps: dict[str, Any] = self.initialize_params(server, Path("/"))["capabilities"]
        return caps

    def initialize_params(self, server: str, root: Path) -> dict[str, Any]:
        """The full `initialize` params this editor sends for a workspace root."""
        params = copy.deepcopy(self.initialize)
        extra = {k: v for k, v in self.per_server.get(server, {}).items() if not k.startswith("_")}
        _deep_merge(params, copy.deepcopy(extra))
        params["processId"] = os.getpid() if self.sends_process_id else None
        absolute = os.path.abspath(root)
        if self.root.get("rootPath"):
            params["rootPath"] = absolute
        if self.root.get("rootUri"):
            params["rootUri"] = path_uri(root)
        folder_name = self.root.get("workspaceFolders")
        if folder_name is not None:
            name = absolute if folder_name == "path" else Path(absolute).name
            params["workspaceFolders"] = [{"uri": path_uri(root), "name": name}]
        return params

    def declares(self, server: str, *path: str) -> Any:
        """The capability at `path` (e.g. "textDocument", "diagnostic"), or None if absent."""
        node: Any = self.capabilities(server)
        for key in path:
            if not isinstance(node, dict) or key not in node:
                return None
            node = node[key]
        return node

    def offered_encodings(self, server: str) -> list[str]:
        """Position encodings this editor accepts: 3.17 `positionEncodings`, clangd's `offsetEncoding`, utf-16."""
        offered: list[str] = []
        for path in (("general", "positionEncodings"), ("offsetEncoding",)):
            value = self.declares(server, *path)
            if isinstance(value, list):
                offered += [v for v in value if isinstance(v, str)]
        return [*offered, "utf-16"]


def _deep_merge(into: dict[str, Any], extra: dict[str, Any]) -> None:
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(into.get(key), dict):
            _deep_merge(into[key], value)
        else:
            into[key] = value


def _habits(data: dict[str, Any]) -> Habits:
    ready = {
        server: ReadySignal(
            log=signal.get("log"),
            notifications=tuple(signal.get("notifications", ())),
            quiescent=bool(signal.get("quiescent", False)),
            sleep=float(signal.get("sleep", 0.0)),
            timeout=float(signal.get("timeout", 60.0)),
        )
        for server, signal in data.get("ready", {}).items()
    }
    return Habits(
        ready=ready,
        opens=data.get("opens", "never"),
        open_version=int(data.get("open_version", 1)),
        language_id=dict(data.get("language_id", {})),
        initialized_twice=bool(data.get("initialized_twice", False)),
        configuration_answer=data.get("configuration_answer", "per-item"),
    )


@cache
def load_profile(name: str) -> Profile:
    """Read profiles/<name>.json."""
    data = json.loads((PROFILE_DIR / f"{name}.json").read_text(encoding="utf-8"))
    kind = data.get("kind", "editor")
    if kind not in ("editor", "agent"):
        raise ValueError(f"{name}: unknown kind {kind!r}")
    servers = data.get("servers")
    return Profile(
        name=data["name"],
        editor=data["editor"],
        source=data["source"],
        sends_process_id=bool(data["sends_process_id"]),
        initialize=data["initialize"],
        per_server=data.get("per_server", {}),
        kind=kind,
        servers=tuple(servers) if servers is not None else None,
        root={**DEFAULT_ROOT, **data.get("root", {})},
        habits=_habits(data.get("habits", {})),
    )


def profile_names(kind: Kind = "editor", server: str | None = None) -> list[str]:
    """The profiles of one kind shipped under profiles/ (those set up for `server`, if given), sorted."""
    out = []
    for path in sorted(PROFILE_DIR.glob("*.json")):
        profile = load_profile(path.stem)
        if profile.kind == kind and (server is None or profile.servers is None or server in profile.servers):
            out.append(path.stem)
    return out
