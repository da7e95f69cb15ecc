"""What the test client tells servers about itself and how it answers their requests.

The defaults imitate a capable editor (the kind of client lensmux fronts), so real
servers such as pyright and clangd behave as they would for a user.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from support.lsp_framing import LspClientError

METHOD_NOT_FOUND = -32601
INTERNAL_ERROR = -32603

ServerRequestHandler = Callable[[Any], Any]


class LspResponseError(LspClientError):
    """The peer answered a request with a JSON-RPC error (or a handler wants to)."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.data = data

    def to_wire(self) -> dict[str, Any]:
        """The `error` member of a response carrying this error."""
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        return error


def path_uri(path: Path) -> str:
    """The file:// URI of a path (made absolute, symlinks kept)."""
    return Path(os.path.abspath(path)).as_uri()


def uri_path(uri: str) -> Path:
    """The local path of a file:// URI."""
    parsed = urlparse(uri)
    if parsed.scheme != "file":
        raise ValueError(f"not a file URI: {uri!r}")
    return Path(unquote(parsed.path))


def default_client_capabilities() -> dict[str, Any]:
    """Client capabilities of a capable editor; a fresh dict each call, safe to modify."""
    symbol_kinds = {"valueSet": list(range(1, 27))}
    return {
        "general": {"positionEncodings": ["utf-16"]},
        "workspace": {
            "applyEdit": True,
            "workspaceEdit": {"documentChanges": True},
            "configuration": True,
            "workspaceFolders": True,
            "didChangeConfiguration": {"dynamicRegistration": True},
            "didChangeWatchedFiles": {
                "dynamicRegistration": True,
                "relativePatternSupport": True,
            },
            "symbol": {"dynamicRegistration": False, "symbolKind": symbol_kinds},
        },
        "textDocument": {
            "synchronization": {
                "dynamicRegistration": False,
                "didSave": True,
                "willSave": False,
                "willSaveWaitUntil": False,
            },
            "hover": {"contentFormat": ["markdown", "plaintext"]},
            # Without linkSupport servers answer with plain Locations, which tests compare.
            "definition": {"linkSupport": False},
            "declaration": {"linkSupport": False},
            "typeDefinition": {"linkSupport": False},
            "implementation": {"linkSupport": False},
            "references": {},
            "documentSymbol": {
                "hierarchicalDocumentSymbolSupport": True,
                "symbolKind": symbol_kinds,
            },
            "callHierarchy": {"dynamicRegistration": False},
            "publishDiagnostics": {"relatedInformation": True, "versionSupport": True},
        },
        "window": {
            "workDoneProgress": True,
            "showMessage": {},
            "showDocument": {"support": False},
        },
    }


def capabilities_declaring(declaration: dict[str, Any] | None) -> dict[str, Any]:
    """default_client_capabilities with `textDocument.declaration` set to `declaration`, or left out for None."""
    caps = default_client_capabilities()
    if declaration is None:
        del caps["textDocument"]["declaration"]
    else:
        caps["textDocument"]["declaration"] = declaration
    return caps


def workspace_folders_for(root: Path) -> list[dict[str, str]]:
    """The single workspace folder the client announces for a root."""
    return [{"uri": path_uri(root), "name": Path(os.path.abspath(root)).name}]


def initialize_params(
    root: Path,
    *,
    client_name: str,
    capabilities: dict[str, Any] | None,
    workspace_folders: bool,
    process_id: int | None,
    initialization_options: Any,
    locale: str | None = None,
) -> dict[str, Any]:
    """Params of the `initialize` request for a project root (`locale` only when given, as most editors omit it)."""
    params: dict[str, Any] = {
        "processId": process_id,
        "clientInfo": {"name": client_name, "version": "test"},
        "rootPath": os.path.abspath(root),
        "rootUri": path_uri(root),
        "capabilities": (capabilities if capabilities is not None else default_client_capabilities()),
        "trace": "off",
        "workspaceFolders": workspace_folders_for(root) if workspace_folders else None,
    }
    if initialization_options is not None:
        params["initializationOptions"] = initialization_options
    if locale is not None:
        params["locale"] = locale
    return params


def default_server_request_handlers(
    folders: Callable[[], Sequence[dict[str, str]] | None],
) -> dict[str, ServerRequestHandler]:
    """Answers an editor gives to server->client requests; `folders` reads the current folders."""

    def configuration(params: Any) -> list[None]:
        # pyright waits for one entry per item; None means "use your defaults".
        items = params.get("items", []) if isinstance(params, dict) else []
        return [None] * len(items)

    def no_result(params: Any) -> None:
        return None

    def apply_edit(params: Any) -> dict[str, bool]:
        return {"applied": True}

    def workspace_folders(params: Any) -> list[dict[str, str]] | None:
        current = folders()
        return list(current) if current is not None else None

    return {
        "workspace/configuration": configuration,
        "window/workDoneProgress/create": no_result,
        "client/registerCapability": no_result,
        "client/unregisterCapability": no_result,
        "workspace/applyEdit": apply_edit,
        "window/showMessageRequest": no_result,
        "workspace/workspaceFolders": workspace_folders,
    }


def method_not_found(method: str) -> LspResponseError:
    """The error a client gives for a server->client request it does not know."""
    return LspResponseError(METHOD_NOT_FOUND, f"unhandled method {method}")
