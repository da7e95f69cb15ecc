"""A result as the server alone would have given it to one client.

The server answers once for everyone who asked the same thing (a leader and its followers, and
later askers from the cache); each asker gets that answer in its own terms: its document
versions in edits, what its capabilities take (snippets, documentChanges, hover markup,
flat symbols, code actions as Commands), its own wording of diagnostics, the part of a whole
list the server alone filters for it (pyright's definitions), and only what its own opens put
in the server's index. Fresh, coalesced and cached answers go through the same
function, so a cached answer is shaped exactly as a fresh one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from msgspec import Raw

from lensmux.daemon.mux.clients.client_caps import declared
from lensmux.daemon.mux.diagnostics import diagnostic_wording
from lensmux.daemon.mux.diagnostics.diagnostic_wording import CODE_ACTION
from lensmux.daemon.mux.diagnostics.diagnostics_pull import DOCUMENT_PULL
from lensmux.daemon.mux.views import index_scope
from lensmux.daemon.mux.views.edits import EDIT_RESULT_METHODS, client_versions, renumber_result
from lensmux.daemon.mux.views.result_shape import (
    COMPLETION_METHODS,
    EDIT_METHODS,
    HOVER_METHOD,
    SYMBOLS_METHOD,
    flat_symbols,
    shape_result,
)
from lensmux.daemon.wire import envelope as ev

if TYPE_CHECKING:
    from lensmux.daemon.mux.clients.client_session import ClientSession
    from lensmux.daemon.mux.instance import Instance

_SHAPED = COMPLETION_METHODS | EDIT_METHODS | {HOVER_METHOD}
_SIGNATURE_HELP = "textDocument/signatureHelp"
# A pull the server answers itself (pyright, for a client it registered pulls for) has its
# report's diagnostics worded for the client as pushed ones are (diagnostic_wording.py).
_PER_CLIENT = _SHAPED | EDIT_RESULT_METHODS | {SYMBOLS_METHOD, DOCUMENT_PULL, _SIGNATURE_HELP}


def differs_per_client(instance: Instance, method: str) -> bool:
    """Whether two askers of `method` may get different answers from the one result."""
    adapter = instance.adapter
    return (
        method in _PER_CLIENT
        or method in adapter.filters_per_client
        or (method in index_scope.METHODS and adapter.scopes_to_opened_files(method))
    )


def for_client(
    instance: Instance,
    client: ClientSession,
    method: str,
    result: Raw,
    doc_uri: str | None,
    *,
    diagnostics_back: dict[Any, Any] | None = None,
) -> Raw:
    """`result` as the server alone would have answered `client`'s `method` about `doc_uri`."""
    own = result
    if method in EDIT_RESULT_METHODS:
        own = renumber_result(own, client_versions(instance.documents, client.id))
    if method in _SHAPED:
        own = shape_result(
            method,
            own,
            client.capabilities,
            edits_follow_caps=instance.adapter.edits_follow_client_caps,
            plaintext_hover=instance.adapter.plaintext_hover,
            folds_label_details=instance.adapter.folds_label_details,
        )
    if method in COMPLETION_METHODS:
        # Documentation in the format the client listed, where the server words it so (pyright).
        worded = instance.adapter.completion_for_client(bytes(own), client.capabilities)
        own = own if worded is None else Raw(worded)
    if diagnostics_back:
        own = diagnostic_wording.result_to_client(own, diagnostics_back)
    if method == CODE_ACTION and _takes_commands_only(instance, client):
        own = ev.encode_value(instance.adapter.code_actions_as_commands(ev.decode_value(own) or []))
    if method == SYMBOLS_METHOD and doc_uri is not None:
        own = flat_symbols(own, doc_uri, client.capabilities, blank_containers=instance.adapter.blank_flat_containers)
    if method == _SIGNATURE_HELP:
        # Worded by what the client declared, where the server does so (pyright: label offsets).
        shaped = instance.adapter.signature_help_for_client(bytes(own), client.capabilities)
        own = own if shaped is None else Raw(shaped)
    if method in instance.adapter.filters_per_client:
        # The whole answer the shared server gave, filtered as the server alone filters it for
        # this client (pyright's definition and declaration lists).
        filtered = instance.adapter.filtered_for_client(method, bytes(own), client.capabilities)
        own = own if filtered is None else Raw(filtered)
    if method == DOCUMENT_PULL and doc_uri is not None:
        own = _pulled_for_client(instance, client, own, doc_uri)
    if method in index_scope.METHODS:
        # Only what this client's own opens would have put in the server's index.
        own = index_scope.for_client(instance, client, method, own, doc_uri)
    return own


def _pulled_for_client(instance: Instance, client: ClientSession, result: Raw, uri: str) -> Raw:
    """A full document report's items in the client's wording; the same bytes when that is the server's."""
    if not instance.adapter.words_diagnostics_for(client.capabilities):
        return result  # most clients: no need to decode the report at all
    report = ev.decode_value(result)
    items = report.get("items") if isinstance(report, dict) and report.get("kind") == "full" else None
    if not isinstance(items, list):
        return result
    worded = diagnostic_wording.for_client(instance, client, uri, items)
    if worded is items:
        return result
    report["items"] = worded
    return ev.encode_value(report)


def _takes_commands_only(instance: Instance, client: ClientSession) -> bool:
    """A client the server alone would answer code actions with Commands, not literals."""
    return instance.adapter.code_actions_follow_client_caps and not declared(
        client.capabilities, "textDocument.codeAction.codeActionLiteralSupport"
    )
