"""What one client declared in its `initialize`: the questions routing asks of it.

The server is told the daemon's own capabilities; these lookups decide what
each client is sent of the server's traffic (pull or push diagnostics,
registrations, refreshes, snippets, documentChanges, the hover format).
"""

from __future__ import annotations

from typing import Any

from lensmux.adapters.capabilities import declared, markup_kind

__all__ = [
    "REFRESH_SUPPORT",
    "accepts_refresh",
    "declared",
    "hover_format",
    "pulls_diagnostics",
    "registers_dynamically",
    "registration_path",
    "supports_document_changes",
    "supports_snippets",
]

# Registration methods whose client capability is not textDocument.<name of the method>.
_REGISTRATION_PATHS = {
    "workspace/didChangeWatchedFiles": "workspace.didChangeWatchedFiles",
    "workspace/didChangeConfiguration": "workspace.didChangeConfiguration",
    "workspace/symbol": "workspace.symbol",
    "workspace/executeCommand": "workspace.executeCommand",
    "workspace/willCreateFiles": "workspace.fileOperations",
    "workspace/didCreateFiles": "workspace.fileOperations",
    "workspace/willRenameFiles": "workspace.fileOperations",
    "workspace/didRenameFiles": "workspace.fileOperations",
    "workspace/willDeleteFiles": "workspace.fileOperations",
    "workspace/didDeleteFiles": "workspace.fileOperations",
    "textDocument/didOpen": "textDocument.synchronization",
    "textDocument/didChange": "textDocument.synchronization",
    "textDocument/didClose": "textDocument.synchronization",
    "textDocument/didSave": "textDocument.synchronization",
    "textDocument/willSave": "textDocument.synchronization",
    "textDocument/willSaveWaitUntil": "textDocument.synchronization",
    "textDocument/documentColor": "textDocument.colorProvider",
    "textDocument/prepareCallHierarchy": "textDocument.callHierarchy",
    "textDocument/prepareTypeHierarchy": "textDocument.typeHierarchy",
    "textDocument/semanticTokens": "textDocument.semanticTokens",
    "notebookDocument/sync": "notebookDocument.synchronization",
}

# Refresh requests and the client capability that allows each.
REFRESH_SUPPORT = {
    "workspace/diagnostic/refresh": "workspace.diagnostics.refreshSupport",
    "workspace/semanticTokens/refresh": "workspace.semanticTokens.refreshSupport",
    "workspace/inlayHint/refresh": "workspace.inlayHint.refreshSupport",
    "workspace/codeLens/refresh": "workspace.codeLens.refreshSupport",
    "workspace/inlineValue/refresh": "workspace.inlineValue.refreshSupport",
    "workspace/foldingRange/refresh": "workspace.foldingRange.refreshSupport",
}


def registration_path(method: str) -> str | None:
    """The client capability a dynamic registration of `method` belongs to."""
    if method in _REGISTRATION_PATHS:
        return _REGISTRATION_PATHS[method]
    prefix = "textDocument/"
    if method.startswith(prefix) and "/" not in method[len(prefix) :]:
        return "textDocument." + method[len(prefix) :]
    return None


def registers_dynamically(caps: dict[str, Any], method: str) -> bool:
    """Whether the client declared dynamicRegistration for the feature of `method`."""
    path = registration_path(method)
    return path is not None and declared(caps, f"{path}.dynamicRegistration") is True


def accepts_refresh(caps: dict[str, Any], method: str) -> bool:
    """Whether the client declared refreshSupport for refresh request `method`."""
    path = REFRESH_SUPPORT.get(method)
    return path is not None and declared(caps, path) is True


def pulls_diagnostics(caps: dict[str, Any]) -> bool:
    """Whether the client declared pull diagnostics (textDocument.diagnostic)."""
    return isinstance(declared(caps, "textDocument.diagnostic"), dict)


def supports_snippets(caps: dict[str, Any]) -> bool:
    """Whether the client accepts snippet completions."""
    return declared(caps, "textDocument.completion.completionItem.snippetSupport") is True


def supports_document_changes(caps: dict[str, Any]) -> bool:
    """Whether the client accepts `documentChanges` in WorkspaceEdits."""
    return declared(caps, "workspace.workspaceEdit.documentChanges") is True


def hover_format(caps: dict[str, Any]) -> str:
    """The markup kind a server alone answers this client's hovers in: "markdown" or "plaintext".

    The first of the two that the client lists in `textDocument.hover.contentFormat` (its order
    is its preference); plaintext when it lists neither or declares nothing, as the protocol
    says and as clangd and pyright do (seen with both: ["foo", "markdown"] gets markdown,
    ["plaintext", "markdown"], [] and a bare "markdown" get plaintext).
    """
    return markup_kind(caps, "textDocument.hover.contentFormat")
