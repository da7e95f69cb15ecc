"""Editor capability profiles (profiles/*.json) and the `initialize` params they make."""

from __future__ import annotations

import copy
import json
import os
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from support.lspclient import path_uri

PROFILE_DIR = Path(__file__).with_name("profiles")


@dataclass(frozen=True)
class Profile:
    """One editor as a server sees it: what it sends in `initialize`, per server."""

    name: str
    editor: str
    source: str
    sends_process_id: bool
    initialize: dict[str, Any]
    per_server: dict[str, Any]

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
        params["rootPath"] = os.path.abspath(root)
        params["rootUri"] = path_uri(root)
        params["workspaceFolders"] = [{"uri": path_uri(root), "name": Path(os.path.abspath(root)).name}]
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


@cache
def load_profile(name: str) -> Profile:
    """Read profiles/<name>.json."""
    data = json.loads((PROFILE_DIR / f"{name}.json").read_text(encoding="utf-8"))
    return Profile(
        name=data["name"],
        editor=data["editor"],
        source=data["source"],
        sends_process_id=bool(data["sends_process_id"]),
        initialize=data["initialize"],
        per_server=data.get("per_server", {}),
    )


def profile_names() -> list[str]:
    """Every profile shipped under profiles/, sorted."""
    return sorted(p.stem for p in PROFILE_DIR.glob("*.json"))
