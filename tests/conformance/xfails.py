"""Comparisons today's lensmux fails, each with the issue 12 point it shows.

Key: (server, profile, aspect) as in test_conformance.py. Remove an entry when its fix lands: the
xfail is strict, so a comparison that starts to pass fails the run until its entry is removed.
TIMING lists the entries whose failure today depends on a race between the two clients; those
may pass now and then, so they are not strict.
"""

from __future__ import annotations

DIAGNOSTICS = (
    "issue 12 point 7: no diagnostics on opening a document another client holds, the empty set after didClose is "
    "dropped (and with a pull-declaring first client, point 5: pyright pull-only, or diagnostics shaped by the "
    "first client's publishDiagnostics capabilities)"
)

DOCUMENTS = (
    "issue 12 point 5: documentSymbol is hierarchical or flat as the first client declared "
    "(hierarchicalDocumentSymbolSupport), not as this one did"
)

INITIALIZE = (
    "issue 12 point 5: the InitializeResult is the one the first client's capabilities produced "
    "(renameProvider.prepareProvider follows the first client's rename.prepareSupport)"
)

NOTIFICATIONS_CLANGD = (
    "issue 12 point 5: clangd's extension notification textDocument/clangd.fileStatus (enabled by the daemon's "
    "initializationOptions, never asked for by this client) about other clients' files reaches this client"
)

QUICKFIX = (
    "issue 12 point 4: the versioned WorkspaceEdit in the codeAction result carries the daemon's document version, "
    "not this client's (and, for a client without documentChanges, point 5: the edit's shape follows the first "
    "client)"
)

NAVIGATION = (
    "issue 12 point 1: after the busy client's cancelled references, pyright fails every references request (-32603)"
)

REFERENCES = (
    "issue 12 point 1: the busy client's cancelled references break pyright's references for every client (-32603 "
    "this._token.cancel is not a function)"
)

REGISTRATIONS = (
    "issue 12 point 6: this client holds the registrations made for the first client (replayed whatever it "
    "declared: dynamicRegistration, relativePatternSupport), not the ones the server makes for it"
)

WORKSPACE_FOLDERS = (
    "issue 12 point 9: didChangeWorkspaceFolders from a client never reaches the shared server; the added folder's "
    "symbols never appear"
)

NOTIFICATIONS_PYRIGHT = (
    "issue 12 point 5 (and 7): this client may receive no publishDiagnostics at all: a pull-declaring first "
    "client made pyright pull-only, and the diagnostics of a document another client opened first are not replayed"
)

CODE_ACTION = (
    "issue 12 point 3: the server's workspace/applyEdit for this client's executeCommand goes to the client with "
    "the newest request in flight"
)


REFRESH = (
    "issue 12 point 6: a refresh request (workspace/semanticTokens/refresh) reaches this client, which never declared "
    "refreshSupport for it"
)

XFAILS: dict[tuple[str, str, str], str] = {
    ("clangd", "eglot", "diagnostics"): DIAGNOSTICS,
    ("clangd", "eglot", "documents"): DOCUMENTS,
    ("clangd", "eglot", "initialize"): INITIALIZE,
    ("clangd", "eglot", "notifications"): NOTIFICATIONS_CLANGD,
    ("clangd", "eglot", "quickfix"): QUICKFIX,
    ("clangd", "helix", "diagnostics"): DIAGNOSTICS,
    ("clangd", "helix", "documents"): DOCUMENTS,
    ("clangd", "helix", "notifications"): NOTIFICATIONS_CLANGD,
    ("clangd", "helix", "quickfix"): QUICKFIX,
    ("clangd", "lsp-mode", "diagnostics"): DIAGNOSTICS,
    ("clangd", "lsp-mode", "notifications"): NOTIFICATIONS_CLANGD,
    ("clangd", "lsp-mode", "quickfix"): QUICKFIX,
    ("clangd", "neovim-0.10", "diagnostics"): DIAGNOSTICS,
    ("clangd", "neovim-0.10", "notifications"): NOTIFICATIONS_CLANGD,
    ("clangd", "neovim-0.7", "diagnostics"): DIAGNOSTICS,
    ("clangd", "neovim-0.7", "notifications"): NOTIFICATIONS_CLANGD,
    ("clangd", "neovim-0.7", "quickfix"): QUICKFIX,
    ("clangd", "vscode", "diagnostics"): DIAGNOSTICS,
    ("clangd", "vscode", "initialize"): INITIALIZE,
    ("clangd", "vscode", "notifications"): NOTIFICATIONS_CLANGD,
    ("clangd", "vscode", "quickfix"): QUICKFIX,
    ("pyright", "eglot", "diagnostics"): DIAGNOSTICS,
    ("pyright", "eglot", "documents"): DOCUMENTS,
    ("pyright", "eglot", "navigation"): NAVIGATION,
    ("pyright", "eglot", "references"): REFERENCES,
    ("pyright", "eglot", "registrations"): REGISTRATIONS,
    ("pyright", "eglot", "workspace_folders"): WORKSPACE_FOLDERS,
    ("pyright", "helix", "diagnostics"): DIAGNOSTICS,
    ("pyright", "helix", "documents"): DOCUMENTS,
    ("pyright", "helix", "navigation"): NAVIGATION,
    ("pyright", "helix", "references"): REFERENCES,
    ("pyright", "helix", "registrations"): REGISTRATIONS,
    ("pyright", "helix", "workspace_folders"): WORKSPACE_FOLDERS,
    ("pyright", "lsp-mode", "diagnostics"): DIAGNOSTICS,
    ("pyright", "lsp-mode", "navigation"): NAVIGATION,
    ("pyright", "lsp-mode", "references"): REFERENCES,
    ("pyright", "lsp-mode", "registrations"): REGISTRATIONS,
    ("pyright", "lsp-mode", "workspace_folders"): WORKSPACE_FOLDERS,
    ("pyright", "neovim-0.10", "diagnostics"): DIAGNOSTICS,
    ("pyright", "neovim-0.10", "navigation"): NAVIGATION,
    ("pyright", "neovim-0.10", "references"): REFERENCES,
    ("pyright", "neovim-0.10", "workspace_folders"): WORKSPACE_FOLDERS,
    ("pyright", "neovim-0.7", "diagnostics"): DIAGNOSTICS,
    ("pyright", "neovim-0.7", "navigation"): NAVIGATION,
    ("pyright", "neovim-0.7", "notifications"): NOTIFICATIONS_PYRIGHT,
    ("pyright", "neovim-0.7", "references"): REFERENCES,
    ("pyright", "neovim-0.7", "registrations"): REGISTRATIONS,
    ("pyright", "neovim-0.7", "workspace_folders"): WORKSPACE_FOLDERS,
    ("pyright", "vscode", "diagnostics"): DIAGNOSTICS,
    ("pyright", "vscode", "navigation"): NAVIGATION,
    ("pyright", "vscode", "references"): REFERENCES,
    ("pyright", "vscode", "registrations"): REGISTRATIONS,
    ("pyright", "vscode", "workspace_folders"): WORKSPACE_FOLDERS,
    ("clangd", "eglot", "code_action"): CODE_ACTION,
    ("clangd", "helix", "code_action"): CODE_ACTION,
    ("clangd", "lsp-mode", "code_action"): CODE_ACTION,
    ("clangd", "neovim-0.10", "code_action"): CODE_ACTION,
    ("clangd", "neovim-0.7", "code_action"): CODE_ACTION,
    ("clangd", "vscode", "code_action"): CODE_ACTION,
    ("pyright", "eglot", "code_action"): CODE_ACTION,
    ("pyright", "helix", "code_action"): CODE_ACTION,
    ("pyright", "lsp-mode", "code_action"): CODE_ACTION,
    ("pyright", "neovim-0.10", "code_action"): CODE_ACTION,
    ("pyright", "neovim-0.7", "code_action"): CODE_ACTION,
    ("pyright", "vscode", "code_action"): CODE_ACTION,
    ("clangd", "neovim-0.7", "registrations"): REFRESH,
    ("pyright", "lsp-mode", "notifications"): NOTIFICATIONS_PYRIGHT,
    ("pyright", "helix", "notifications"): NOTIFICATIONS_PYRIGHT,
    ("pyright", "eglot", "notifications"): NOTIFICATIONS_PYRIGHT,
    ("pyright", "neovim-0.10", "notifications"): NOTIFICATIONS_PYRIGHT,
    ("pyright", "vscode", "notifications"): NOTIFICATIONS_PYRIGHT,
}

TIMING: frozenset[tuple[str, str, str]] = frozenset(
    {
        ("clangd", "eglot", "code_action"),
        ("clangd", "helix", "code_action"),
        ("clangd", "lsp-mode", "code_action"),
        ("clangd", "neovim-0.10", "code_action"),
        ("clangd", "neovim-0.7", "code_action"),
        ("clangd", "vscode", "code_action"),
        ("pyright", "eglot", "code_action"),
        ("pyright", "helix", "code_action"),
        ("pyright", "lsp-mode", "code_action"),
        ("pyright", "neovim-0.10", "code_action"),
        ("pyright", "neovim-0.7", "code_action"),
        ("pyright", "vscode", "code_action"),
        ("clangd", "neovim-0.7", "registrations"),
        ("pyright", "lsp-mode", "notifications"),
        ("pyright", "helix", "notifications"),
        ("pyright", "eglot", "notifications"),
        ("pyright", "neovim-0.10", "notifications"),
        ("pyright", "vscode", "notifications"),
    }
)
