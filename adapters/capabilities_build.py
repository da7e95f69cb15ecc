"""The client capabilities the daemon declares to every server, built with lsprotocol's types.

A shared server is initialized once, so what it is told must not depend on
the first client: the daemon declares one rich, fixed set and serves each
client in the mode that client declared (push or pull diagnostics,
registrations, refreshes, progress).

Two choices shape the set. Diagnostics are declared push-only: the daemon keeps
what the server publishes and answers pull clients itself, so push clients
are never left with a pull-only server. Dynamic registration is declared only
where a server has no static alternative (watched files, configuration):
a feature registered dynamically would be invisible to every client that
cannot register, while one announced in the InitializeResult reaches all.

The daemon never imports this module: lsprotocol with cattrs would be a third of a
multiplexing daemon's memory for two fixed messages. The set, and the smaller one the
daemon declares as a client of its own instances, are built here and shipped as plain
data beside it (capabilities.json, read by capabilities.py);
tests/adapters/test_daemon_capabilities.py fails when the two differ. After a change here:

    .venv/bin/python -m lensmux.adapters.capabilities_build    # rewrites capabilities.json
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from lsprotocol import converters
from lsprotocol import types as lsp

_converter = converters.get_converter()
_SYMBOL_KINDS = list(lsp.SymbolKind)
_COMPLETION_KINDS = list(lsp.CompletionItemKind)
_MARKUP = [lsp.MarkupKind.Markdown, lsp.MarkupKind.PlainText]


def _text_document() -> lsp.TextDocumentClientCapabilities:
    return lsp.TextDocumentClientCapabilities(
        synchronization=lsp.TextDocumentSyncClientCapabilities(dynamic_registration=False, did_save=True),
        completion=lsp.CompletionClientCapabilities(
            completion_item=lsp.ClientCompletionItemOptions(
                snippet_support=True,
                documentation_format=_MARKUP,
                deprecated_support=True,
                label_details_support=True,
                insert_replace_support=False,
                resolve_support=lsp.ClientCompletionItemResolveOptions(
                    properties=["documentation", "detail", "additionalTextEdits"]
                ),
            ),
            completion_item_kind=lsp.ClientCompletionItemOptionsKind(value_set=_COMPLETION_KINDS),
            context_support=True,
        ),
        hover=lsp.HoverClientCapabilities(content_format=_MARKUP),
        signature_help=lsp.SignatureHelpClientCapabilities(
            signature_information=lsp.ClientSignatureInformationOptions(
                documentation_format=_MARKUP,
                parameter_information=lsp.ClientSignatureParameterInformationOptions(label_offset_support=True),
                active_parameter_support=True,
            ),
            context_support=True,
        ),
        # Plain Locations: every client understands them, LocationLinks only some.
        declaration=lsp.DeclarationClientCapabilities(link_support=False),
        definition=lsp.DefinitionClientCapabilities(link_support=False),
        type_definition=lsp.TypeDefinitionClientCapabilities(link_support=False),
        implementation=lsp.ImplementationClientCapabilities(link_support=False),
        references=lsp.ReferenceClientCapabilities(),
        document_highlight=lsp.DocumentHighlightClientCapabilities(),
        document_symbol=lsp.DocumentSymbolClientCapabilities(
            symbol_kind=lsp.ClientSymbolKindOptions(value_set=_SYMBOL_KINDS),
            hierarchical_document_symbol_support=True,
        ),
        code_action=lsp.CodeActionClientCapabilities(
            code_action_literal_support=lsp.ClientCodeActionLiteralOptions(
                code_action_kind=lsp.ClientCodeActionKindOptions(value_set=[k for k in lsp.CodeActionKind if k.value])
            ),
            is_preferred_support=True,
            data_support=True,
            resolve_support=lsp.ClientCodeActionResolveOptions(properties=["edit"]),
        ),
        code_lens=lsp.CodeLensClientCapabilities(),
        document_link=lsp.DocumentLinkClientCapabilities(tooltip_support=True),
        color_provider=lsp.DocumentColorClientCapabilities(),
        formatting=lsp.DocumentFormattingClientCapabilities(),
        range_formatting=lsp.DocumentRangeFormattingClientCapabilities(),
        on_type_formatting=lsp.DocumentOnTypeFormattingClientCapabilities(),
        rename=lsp.RenameClientCapabilities(prepare_support=True),
        folding_range=lsp.FoldingRangeClientCapabilities(line_folding_only=False),
        selection_range=lsp.SelectionRangeClientCapabilities(),
        publish_diagnostics=lsp.PublishDiagnosticsClientCapabilities(
            related_information=True,
            tag_support=lsp.ClientDiagnosticsTagOptions(value_set=list(lsp.DiagnosticTag)),
            version_support=True,
            code_description_support=True,
            data_support=True,
        ),
        call_hierarchy=lsp.CallHierarchyClientCapabilities(),
        semantic_tokens=lsp.SemanticTokensClientCapabilities(
            requests=lsp.ClientSemanticTokensRequestOptions(range=True, full=True),
            token_types=[t.value for t in lsp.SemanticTokenTypes],
            token_modifiers=[m.value for m in lsp.SemanticTokenModifiers],
            formats=[lsp.TokenFormat.Relative],
            multiline_token_support=True,
        ),
        linked_editing_range=lsp.LinkedEditingRangeClientCapabilities(),
        type_hierarchy=lsp.TypeHierarchyClientCapabilities(),
        inlay_hint=lsp.InlayHintClientCapabilities(),
        # No `diagnostic`: pull clients are answered by the daemon from what is pushed.
    )


def _workspace() -> lsp.WorkspaceClientCapabilities:
    return lsp.WorkspaceClientCapabilities(
        apply_edit=True,
        workspace_edit=lsp.WorkspaceEditClientCapabilities(
            document_changes=True,
            resource_operations=[
                lsp.ResourceOperationKind.Create,
                lsp.ResourceOperationKind.Rename,
                lsp.ResourceOperationKind.Delete,
            ],
            failure_handling=lsp.FailureHandlingKind.Abort,
        ),
        did_change_configuration=lsp.DidChangeConfigurationClientCapabilities(dynamic_registration=True),
        # The daemon watches the root itself and sends events for clients that cannot.
        did_change_watched_files=lsp.DidChangeWatchedFilesClientCapabilities(
            dynamic_registration=True, relative_pattern_support=True
        ),
        symbol=lsp.WorkspaceSymbolClientCapabilities(symbol_kind=lsp.ClientSymbolKindOptions(value_set=_SYMBOL_KINDS)),
        execute_command=lsp.ExecuteCommandClientCapabilities(),
        workspace_folders=True,
        configuration=True,
        # Refreshes are forwarded only to the clients that declared them.
        semantic_tokens=lsp.SemanticTokensWorkspaceClientCapabilities(refresh_support=True),
        code_lens=lsp.CodeLensWorkspaceClientCapabilities(refresh_support=True),
        inline_value=lsp.InlineValueWorkspaceClientCapabilities(refresh_support=True),
        inlay_hint=lsp.InlayHintWorkspaceClientCapabilities(refresh_support=True),
        folding_range=lsp.FoldingRangeWorkspaceClientCapabilities(refresh_support=True),
    )


def daemon_client_capabilities() -> dict[str, Any]:
    """The ClientCapabilities every server is initialized with, as a JSON-ready dict."""
    caps = lsp.ClientCapabilities(
        workspace=_workspace(),
        text_document=_text_document(),
        window=lsp.WindowClientCapabilities(
            work_done_progress=True,
            show_message=lsp.ShowMessageRequestClientCapabilities(),
            show_document=lsp.ShowDocumentClientCapabilities(support=True),
        ),
        general=lsp.GeneralClientCapabilities(
            # Every client must support UTF-16; anything else would tie the server to one client's encoding.
            position_encodings=[lsp.PositionEncodingKind.Utf16],
            markdown=lsp.MarkdownClientCapabilities(parser="marked"),
        ),
    )
    value: dict[str, Any] = _converter.unstructure(caps)
    return value


def daemon_initialize_params(root_uri: str, root_path: str, name: str, daemon_pid: int) -> dict[str, Any]:
    """InitializeParams for one server, from the daemon's own capabilities."""
    params = lsp.InitializeParams(
        capabilities=lsp.ClientCapabilities(),
        process_id=daemon_pid,
        root_uri=root_uri,
        root_path=root_path,
        client_info=lsp.ClientInfo(name="lensmux"),
        workspace_folders=[lsp.WorkspaceFolder(uri=root_uri, name=name)],
        trace=lsp.TraceValue.Off,
    )
    value: dict[str, Any] = _converter.unstructure(params)
    value["capabilities"] = daemon_client_capabilities()
    return value


def internal_client_capabilities() -> dict[str, Any]:
    """What the daemon declares as a client of its own instances (indexing, search, the assistant's tools).

    The server does not see these: it was told the daemon's full set above whoever
    started it, so an instance the indexer starts serves editors just as well.
    """
    caps = lsp.ClientCapabilities(
        text_document=lsp.TextDocumentClientCapabilities(
            synchronization=lsp.TextDocumentSyncClientCapabilities(did_save=True),
            document_symbol=lsp.DocumentSymbolClientCapabilities(hierarchical_document_symbol_support=True),
            # Declared so that pyright's definition gives the daemon source files, not stubs
            # (adapters/pyright/pyright_definitions.py).
            declaration=lsp.DeclarationClientCapabilities(link_support=False),
            definition=lsp.DefinitionClientCapabilities(link_support=False),
            references=lsp.ReferenceClientCapabilities(),
            hover=lsp.HoverClientCapabilities(content_format=_MARKUP),
            call_hierarchy=lsp.CallHierarchyClientCapabilities(),
            type_hierarchy=lsp.TypeHierarchyClientCapabilities(),
        ),
        workspace=lsp.WorkspaceClientCapabilities(
            configuration=True, workspace_folders=True, symbol=lsp.WorkspaceSymbolClientCapabilities()
        ),
        window=lsp.WindowClientCapabilities(work_done_progress=True),
    )
    value: dict[str, Any] = _converter.unstructure(caps)
    return value


def internal_initialize_params(root_uri: str, daemon_pid: int) -> dict[str, Any]:
    """The daemon's own `initialize` as a client of an instance."""
    params = lsp.InitializeParams(
        capabilities=lsp.ClientCapabilities(),
        process_id=daemon_pid,
        root_uri=root_uri,
        client_info=lsp.ClientInfo(name="lensmux"),
    )
    value: dict[str, Any] = _converter.unstructure(params)
    value["capabilities"] = internal_client_capabilities()
    return value


SHIPPED = Path(__file__).with_name("capabilities.json")


def shipped_text() -> str:
    """capabilities.json as this module builds it: what servers are told, and the daemon's own as a client."""
    shipped = {"servers": daemon_client_capabilities(), "internal": internal_client_capabilities()}
    return json.dumps(shipped, indent=1) + "\n"


def main() -> int:
    """Write capabilities.json."""
    SHIPPED.write_text(shipped_text(), encoding="utf-8")
    print(f"wrote {SHIPPED}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
