"""The client capabilities the daemon declares to every server, whoever connects first.

The set and why it is what it is are in capabilities_build.py, which builds it with
lsprotocol's types; it is shipped built, as capabilities.json beside this module, so a
daemon never imports lsprotocol and cattrs (16.6 MiB of a multiplexing daemon's 47).
This module reads that plain data, wraps it in each server's `initialize` params and
in the daemon's own as a client of its instances, and reads clients' capabilities dicts.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

_SHIPPED = Path(__file__).with_name("capabilities.json")


@cache
def _shipped_text() -> str:
    return _SHIPPED.read_text(encoding="utf-8")


def _shipped(which: str) -> dict[str, Any]:
    """A fresh copy of one of the shipped sets: callers may change theirs (adapters tweak it)."""
    value: dict[str, Any] = json.loads(_shipped_text())[which]
    return value


def daemon_client_capabilities() -> dict[str, Any]:
    """The ClientCapabilities every server is initialized with."""
    return _shipped("servers")


def daemon_initialize_params(root_uri: str, root_path: str, name: str, daemon_pid: int) -> dict[str, Any]:
    """InitializeParams for one server, from the daemon's own capabilities.

    The fields and their order are those lsprotocol's InitializeParams gives
    (capabilities_build.daemon_initialize_params; the test compares the two).
    """
    return {
        "capabilities": daemon_client_capabilities(),
        "processId": daemon_pid,
        "rootPath": root_path,
        "rootUri": root_uri,
        "workspaceFolders": [{"uri": root_uri, "name": name}],
        "clientInfo": {"name": "lensmux"},
        "trace": "off",
    }


@cache
def own_client_capabilities() -> dict[str, Any]:
    """What the daemon declares as a client of its own instances: shared, not to be changed."""
    return _shipped("internal")


def internal_initialize_params(root_uri: str, daemon_pid: int) -> dict[str, Any]:
    """The daemon's own `initialize` as a client of an instance (daemon/mux/internal_client.py).

    As lsprotocol's InitializeParams gives it (capabilities_build.internal_initialize_params).
    """
    return {
        "capabilities": _shipped("internal"),
        "processId": daemon_pid,
        "rootPath": None,
        "rootUri": root_uri,
        "workspaceFolders": None,
        "clientInfo": {"name": "lensmux"},
    }


def declared(caps: dict[str, Any], path: str) -> Any:
    """The value at a dotted path of a client's capabilities dict (`"textDocument.diagnostic"`), or None."""
    node: Any = caps
    for part in path.split("."):
        if not isinstance(node, dict):
            return None
        node = node.get(part)
    return node


def markup_kind(caps: dict[str, Any], path: str) -> str:
    """The markup kind a server alone writes for a client whose format list is at `path`.

    The first of "markdown" and "plaintext" the client lists there (its order is its
    preference); plaintext when it lists neither or declares nothing, as the protocol says and
    as clangd and pyright do (hover contentFormat, completion and signature documentationFormat).
    """
    formats = declared(caps, path)
    for kind in formats if isinstance(formats, list) else []:
        if kind in ("markdown", "plaintext"):
            return str(kind)
    return "plaintext"
