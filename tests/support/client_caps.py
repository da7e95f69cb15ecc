"""Client capability sets and helpers shared by the tests of each client's mode (real servers).

An eglot-like push client without dynamic registration, a VS Code-like pull client, one
file with one error per server, and what a client holds after the registrations it was sent.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from support.lspclient import LspClient, default_client_capabilities

# An eglot-like editor: push diagnostics only, no dynamic registration at all.
PUSH_ONLY_CAPS: dict[str, Any] = {
    "workspace": {"applyEdit": True, "configuration": True, "workspaceFolders": True},
    "textDocument": {
        "synchronization": {"didSave": True},
        "hover": {"contentFormat": ["plaintext"]},
        "publishDiagnostics": {"relatedInformation": False, "versionSupport": True},
    },
    "window": {"workDoneProgress": True},
}


def pull_caps() -> dict[str, Any]:
    """A VS Code-like editor: pull diagnostics with refresh, dynamic registration."""
    caps = default_client_capabilities()
    caps["textDocument"]["diagnostic"] = {"dynamicRegistration": True, "relatedDocumentSupport": False}
    caps["workspace"]["diagnostics"] = {"refreshSupport": True}
    return caps


@dataclass(frozen=True)
class Case:
    """One server and a file in its sample project with one error."""

    server: str
    language: str
    project: str
    bad: str
    text: str


PYRIGHT = Case("pyright", "python", "py_project", "demo/bad.py", 'count: int = "not a number"\n')
CLANGD = Case("clangd", "c", "c_project", "src/bad.c", "int broken(void) {\n    return no_such_name;\n}\n")


def bad_file(case: Case, request: pytest.FixtureRequest) -> tuple[Path, Path]:
    root: Path = request.getfixturevalue(case.project)
    path = root / case.bad
    path.write_text(case.text)
    return root, path


def is_for(uri: str, *, empty: bool | None = None) -> Any:
    def match(params: Any) -> bool:
        if params.get("uri") != uri:
            return False
        return empty is None or (not params.get("diagnostics")) == empty

    return match


async def round_trip(client: LspClient, uri: str) -> None:
    """Anything the daemon queued for `client` before this answer has arrived after it."""
    await client.request("textDocument/documentSymbol", {"textDocument": {"uri": uri}})


def live_registrations(client: LspClient) -> dict[str, dict[str, Any]]:
    """The registrations a client holds after every register/unregister it was sent."""
    live: dict[str, dict[str, Any]] = {}
    for method, params in client.server_requests:
        if method == "client/registerCapability":
            for reg in params["registrations"]:
                live[reg["id"]] = reg
        elif method == "client/unregisterCapability":
            for item in params["unregisterations"]:
                live.pop(item["id"], None)
    return live


def withdrawn(client: LspClient, ids: set[str], *, since: int) -> bool:
    """Whether some of `ids` were unregistered at the client after its `since`-th server request."""
    return any(
        method == "client/unregisterCapability" and any(item["id"] in ids for item in params["unregisterations"])
        for method, params in client.server_requests[since:]
    )


def completion_texts(answer: Any) -> list[tuple[Any, str]]:
    """(insertTextFormat, the text inserted) of each item of a completion answer."""
    items = answer.get("items", []) if isinstance(answer, dict) else answer or []
    return [
        (i.get("insertTextFormat"), (i.get("textEdit") or {}).get("newText") or i.get("insertText") or "")
        for i in items
    ]
