"""Comparisons today's lensmux fails, each with the issue 12 point it shows.

Key: (server, profile, aspect) as in test_conformance.py. Remove an entry when its fix lands: the
xfail is strict, so a comparison that starts to pass fails the run until its entry is removed.
TIMING lists the entries whose failure today depends on timing (a race between the two clients);
those may pass now and then and are not strict.
"""

from __future__ import annotations

XFAILS: dict[tuple[str, str, str], str] = {
    (
        "clangd",
        "eglot",
        "diagnostics",
    ): "issue 12 point 7: no diagnostics on opening a document another client holds, the empty set after didClose is dropped (and with a pull-declaring first client, point 5: pyright pull-only, or diagnostics shaped by the first client's publishDiagnostics capabilities)",
    (
        "clangd",
        "eglot",
        "documents",
    ): "issue 12 point 5: documentSymbol is hierarchical or flat as the first client declared (hierarchicalDocumentSymbolSupport), not as this one did",
    (
        "clangd",
        "eglot",
        "initialize",
    ): "issue 12 point 5: the InitializeResult is the one the first client's capabilities produced (renameProvider.prepareProvider follows the first client's rename.prepareSupport)",
    (
        "clangd",
        "eglot",
        "notifications",
    ): "issue 12 point 5: clangd's extension notification textDocument/clangd.fileStatus (enabled by the daemon's initializationOptions, never asked for by this client) about other clients' files reaches this client",
    (
        "clangd",
        "eglot",
        "quickfix",
    ): "issue 12 point 4: the versioned WorkspaceEdit in the codeAction result carries the daemon's document version, not this client's (and, for a client without documentChanges, point 5: the edit's shape follows the first client)",
    (
        "clangd",
        "helix",
        "diagnostics",
    ): "issue 12 point 7: no diagnostics on opening a document another client holds, the empty set after didClose is dropped (and with a pull-declaring first client, point 5: pyright pull-only, or diagnostics shaped by the first client's publishDiagnostics capabilities)",
    (
        "clangd",
        "helix",
        "documents",
    ): "issue 12 point 5: documentSymbol is hierarchical or flat as the first client declared (hierarchicalDocumentSymbolSupport), not as this one did",
    (
        "clangd",
        "helix",
        "notifications",
    ): "issue 12 point 5: clangd's extension notification textDocument/clangd.fileStatus (enabled by the daemon's initializationOptions, never asked for by this client) about other clients' files reaches this client",
    (
        "clangd",
        "helix",
        "quickfix",
    ): "issue 12 point 4: the versioned WorkspaceEdit in the codeAction result carries the daemon's document version, not this client's (and, for a client without documentChanges, point 5: the edit's shape follows the first client)",
    (
        "clangd",
        "lsp-mode",
        "diagnostics",
    ): "issue 12 point 7: no diagnostics on opening a document another client holds, the empty set after didClose is dropped (and with a pull-declaring first client, point 5: pyright pull-only, or diagnostics shaped by the first client's publishDiagnostics capabilities)",
    (
        "clangd",
        "lsp-mode",
        "notifications",
    ): "issue 12 point 5: clangd's extension notification textDocument/clangd.fileStatus (enabled by the daemon's initializationOptions, never asked for by this client) about other clients' files reaches this client",
    (
        "clangd",
        "lsp-mode",
        "quickfix",
    ): "issue 12 point 4: the versioned WorkspaceEdit in the codeAction result carries the daemon's document version, not this client's (and, for a client without documentChanges, point 5: the edit's shape follows the first client)",
    (
        "clangd",
        "neovim-0.10",
        "code_action",
    ): "issue 12 point 3: the server's workspace/applyEdit for this client's executeCommand goes to the client with the newest request in flight",
    (
        "clangd",
        "neovim-0.10",
        "diagnostics",
    ): "issue 12 point 7: no diagnostics on opening a document another client holds, the empty set after didClose is dropped (and with a pull-declaring first client, point 5: pyright pull-only, or diagnostics shaped by the first client's publishDiagnostics capabilities)",
    (
        "clangd",
        "neovim-0.10",
        "notifications",
    ): "issue 12 point 5: clangd's extension notification textDocument/clangd.fileStatus (enabled by the daemon's initializationOptions, never asked for by this client) about other clients' files reaches this client",
    (
        "clangd",
        "neovim-0.7",
        "diagnostics",
    ): "issue 12 point 7: no diagnostics on opening a document another client holds, the empty set after didClose is dropped (and with a pull-declaring first client, point 5: pyright pull-only, or diagnostics shaped by the first client's publishDiagnostics capabilities)",
    (
        "clangd",
        "neovim-0.7",
        "notifications",
    ): "issue 12 point 5: clangd's extension notification textDocument/clangd.fileStatus (enabled by the daemon's initializationOptions, never asked for by this client) about other clients' files reaches this client",
    (
        "clangd",
        "neovim-0.7",
        "quickfix",
    ): "issue 12 point 4: the versioned WorkspaceEdit in the codeAction result carries the daemon's document version, not this client's (and, for a client without documentChanges, point 5: the edit's shape follows the first client)",
    (
        "clangd",
        "vscode",
        "code_action",
    ): "issue 12 point 3: the server's workspace/applyEdit for this client's executeCommand goes to the client with the newest request in flight",
    (
        "clangd",
        "vscode",
        "diagnostics",
    ): "issue 12 point 7: no diagnostics on opening a document another client holds, the empty set after didClose is dropped (and with a pull-declaring first client, point 5: pyright pull-only, or diagnostics shaped by the first client's publishDiagnostics capabilities)",
    (
        "clangd",
        "vscode",
        "initialize",
    ): "issue 12 point 5: the InitializeResult is the one the first client's capabilities produced (renameProvider.prepareProvider follows the first client's rename.prepareSupport)",
    (
        "clangd",
        "vscode",
        "notifications",
    ): "issue 12 point 5: clangd's extension notification textDocument/clangd.fileStatus (enabled by the daemon's initializationOptions, never asked for by this client) about other clients' files reaches this client",
    (
        "clangd",
        "vscode",
        "quickfix",
    ): "issue 12 point 4: the versioned WorkspaceEdit in the codeAction result carries the daemon's document version, not this client's (and, for a client without documentChanges, point 5: the edit's shape follows the first client)",
    (
        "pyright",
        "eglot",
        "code_action",
    ): "issue 12 point 3: the server's workspace/applyEdit for this client's executeCommand goes to the client with the newest request in flight",
    (
        "pyright",
        "eglot",
        "diagnostics",
    ): "issue 12 point 7: no diagnostics on opening a document another client holds, the empty set after didClose is dropped (and with a pull-declaring first client, point 5: pyright pull-only, or diagnostics shaped by the first client's publishDiagnostics capabilities)",
    (
        "pyright",
        "eglot",
        "documents",
    ): "issue 12 point 5: documentSymbol is hierarchical or flat as the first client declared (hierarchicalDocumentSymbolSupport), not as this one did",
    (
        "pyright",
        "eglot",
        "navigation",
    ): "issue 12 point 1: after the busy client's cancelled references, pyright fails every references request (-32603)",
    (
        "pyright",
        "eglot",
        "references",
    ): "issue 12 point 1: the busy client's cancelled references break pyright's references for every client (-32603 this._token.cancel is not a function)",
    (
        "pyright",
        "eglot",
        "registrations",
    ): "issue 12 point 6: this client holds the registrations made for the first client (replayed whatever it declared: dynamicRegistration, relativePatternSupport), not the ones the server makes for it",
    (
        "pyright",
        "eglot",
        "workspace_folders",
    ): "issue 12 point 9: didChangeWorkspaceFolders from a client never reaches the shared server; the added folder's symbols never appear",
    (
        "pyright",
        "helix",
        "code_action",
    ): "issue 12 point 3: the server's workspace/applyEdit for this client's executeCommand goes to the client with the newest request in flight",
    (
        "pyright",
        "helix",
        "diagnostics",
    ): "issue 12 point 7: no diagnostics on opening a document another client holds, the empty set after didClose is dropped (and with a pull-declaring first client, point 5: pyright pull-only, or diagnostics shaped by the first client's publishDiagnostics capabilities)",
    (
        "pyright",
        "helix",
        "documents",
    ): "issue 12 point 5: documentSymbol is hierarchical or flat as the first client declared (hierarchicalDocumentSymbolSupport), not as this one did",
    (
        "pyright",
        "helix",
        "navigation",
    ): "issue 12 point 1: after the busy client's cancelled references, pyright fails every references request (-32603)",
    (
        "pyright",
        "helix",
        "references",
    ): "issue 12 point 1: the busy client's cancelled references break pyright's references for every client (-32603 this._token.cancel is not a function)",
    (
        "pyright",
        "helix",
        "registrations",
    ): "issue 12 point 6: this client holds the registrations made for the first client (replayed whatever it declared: dynamicRegistration, relativePatternSupport), not the ones the server makes for it",
    (
        "pyright",
        "helix",
        "workspace_folders",
    ): "issue 12 point 9: didChangeWorkspaceFolders from a client never reaches the shared server; the added folder's symbols never appear",
    (
        "pyright",
        "lsp-mode",
        "code_action",
    ): "issue 12 point 3: the server's workspace/applyEdit for this client's executeCommand goes to the client with the newest request in flight",
    (
        "pyright",
        "lsp-mode",
        "diagnostics",
    ): "issue 12 point 7: no diagnostics on opening a document another client holds, the empty set after didClose is dropped (and with a pull-declaring first client, point 5: pyright pull-only, or diagnostics shaped by the first client's publishDiagnostics capabilities)",
    (
        "pyright",
        "lsp-mode",
        "navigation",
    ): "issue 12 point 1: after the busy client's cancelled references, pyright fails every references request (-32603)",
    (
        "pyright",
        "lsp-mode",
        "references",
    ): "issue 12 point 1: the busy client's cancelled references break pyright's references for every client (-32603 this._token.cancel is not a function)",
    (
        "pyright",
        "lsp-mode",
        "registrations",
    ): "issue 12 point 6: this client holds the registrations made for the first client (replayed whatever it declared: dynamicRegistration, relativePatternSupport), not the ones the server makes for it",
    (
        "pyright",
        "lsp-mode",
        "workspace_folders",
    ): "issue 12 point 9: didChangeWorkspaceFolders from a client never reaches the shared server; the added folder's symbols never appear",
    (
        "pyright",
        "neovim-0.10",
        "code_action",
    ): "issue 12 point 3: the server's workspace/applyEdit for this client's executeCommand goes to the client with the newest request in flight",
    (
        "pyright",
        "neovim-0.10",
        "diagnostics",
    ): "issue 12 point 7: no diagnostics on opening a document another client holds, the empty set after didClose is dropped (and with a pull-declaring first client, point 5: pyright pull-only, or diagnostics shaped by the first client's publishDiagnostics capabilities)",
    (
        "pyright",
        "neovim-0.10",
        "navigation",
    ): "issue 12 point 1: after the busy client's cancelled references, pyright fails every references request (-32603)",
    (
        "pyright",
        "neovim-0.10",
        "references",
    ): "issue 12 point 1: the busy client's cancelled references break pyright's references for every client (-32603 this._token.cancel is not a function)",
    (
        "pyright",
        "neovim-0.10",
        "workspace_folders",
    ): "issue 12 point 9: didChangeWorkspaceFolders from a client never reaches the shared server; the added folder's symbols never appear",
    (
        "pyright",
        "neovim-0.7",
        "code_action",
    ): "issue 12 point 3: the server's workspace/applyEdit for this client's executeCommand goes to the client with the newest request in flight",
    (
        "pyright",
        "neovim-0.7",
        "diagnostics",
    ): "issue 12 point 7: no diagnostics on opening a document another client holds, the empty set after didClose is dropped (and with a pull-declaring first client, point 5: pyright pull-only, or diagnostics shaped by the first client's publishDiagnostics capabilities)",
    (
        "pyright",
        "neovim-0.7",
        "navigation",
    ): "issue 12 point 1: after the busy client's cancelled references, pyright fails every references request (-32603)",
    (
        "pyright",
        "neovim-0.7",
        "notifications",
    ): "issue 12 point 5: this client gets no publishDiagnostics at all: the first client's pull capability made pyright pull-only",
    (
        "pyright",
        "neovim-0.7",
        "references",
    ): "issue 12 point 1: the busy client's cancelled references break pyright's references for every client (-32603 this._token.cancel is not a function)",
    (
        "pyright",
        "neovim-0.7",
        "registrations",
    ): "issue 12 point 6: this client holds the registrations made for the first client (replayed whatever it declared: dynamicRegistration, relativePatternSupport), not the ones the server makes for it",
    (
        "pyright",
        "neovim-0.7",
        "workspace_folders",
    ): "issue 12 point 9: didChangeWorkspaceFolders from a client never reaches the shared server; the added folder's symbols never appear",
    (
        "pyright",
        "vscode",
        "code_action",
    ): "issue 12 point 3: the server's workspace/applyEdit for this client's executeCommand goes to the client with the newest request in flight",
    (
        "pyright",
        "vscode",
        "diagnostics",
    ): "issue 12 point 7: no diagnostics on opening a document another client holds, the empty set after didClose is dropped (and with a pull-declaring first client, point 5: pyright pull-only, or diagnostics shaped by the first client's publishDiagnostics capabilities)",
    (
        "pyright",
        "vscode",
        "navigation",
    ): "issue 12 point 1: after the busy client's cancelled references, pyright fails every references request (-32603)",
    (
        "pyright",
        "vscode",
        "references",
    ): "issue 12 point 1: the busy client's cancelled references break pyright's references for every client (-32603 this._token.cancel is not a function)",
    (
        "pyright",
        "vscode",
        "registrations",
    ): "issue 12 point 6: this client holds the registrations made for the first client (replayed whatever it declared: dynamicRegistration, relativePatternSupport), not the ones the server makes for it",
    (
        "pyright",
        "vscode",
        "workspace_folders",
    ): "issue 12 point 9: didChangeWorkspaceFolders from a client never reaches the shared server; the added folder's symbols never appear",
}

TIMING: frozenset[tuple[str, str, str]] = frozenset({})
