"""WorkspaceEdits the server computed, told in one client's document versions.

The server names documents by the daemon's version numbers; each client has
its own. Results of the methods that can carry a WorkspaceEdit are decoded
only when their raw bytes mention `documentChanges`, so every other answer
still passes through untouched.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from msgspec import Raw

from lensmux.daemon.mux.documents.documents import DocumentStore
from lensmux.daemon.wire import envelope as ev

# Client requests whose results may hold a WorkspaceEdit with versioned documents.
EDIT_RESULT_METHODS = frozenset(
    {
        "textDocument/rename",
        "textDocument/codeAction",
        "codeAction/resolve",
        "workspace/executeCommand",
        "workspace/willRenameFiles",
        "workspace/willCreateFiles",
        "workspace/willDeleteFiles",
    }
)
_MARKER = b'"documentChanges"'

VersionMap = Callable[[str, int | None], int | None]


def versioned_documents(value: Any) -> Iterator[dict[str, Any]]:
    """Every versioned text document identifier in the WorkspaceEdits within `value`."""
    if isinstance(value, list):
        for item in value:
            yield from versioned_documents(item)
        return
    if not isinstance(value, dict):
        return
    changes = value.get("documentChanges")
    if isinstance(changes, list):
        for change in changes:
            ident = change.get("textDocument") if isinstance(change, dict) else None
            if isinstance(ident, dict) and isinstance(ident.get("uri"), str) and "version" in ident:
                yield ident
    for key, item in value.items():
        if key != "documentChanges" and isinstance(item, dict | list):
            yield from versioned_documents(item)


def client_versions(documents: DocumentStore, client: int) -> VersionMap:
    """A map from the daemon's version of a URI to `client`'s own number for it."""

    def mapped(uri: str, version: int | None) -> int | None:
        return documents.client_version_at(uri, client, version if isinstance(version, int) else None)

    return mapped


def renumber(value: Any, versions: VersionMap) -> None:
    """Rewrite, in place, every document version in `value` into another numbering."""
    for ident in versioned_documents(value):
        ident["version"] = versions(ident["uri"], ident["version"])


def renumber_result(result: Raw, versions: VersionMap) -> Raw:
    """`result` with its edits' versions renumbered; the same bytes if it has none."""
    if _MARKER not in bytes(result):
        return result
    value = ev.decode_value(result)
    renumber(value, versions)
    return ev.encode_value(value)


def stale_documents(edit: Any, documents: DocumentStore) -> list[str]:
    """Why an edit no longer fits the open documents: one line per document it names at another version."""
    reasons = []
    for ident in versioned_documents(edit):
        doc = documents.get(ident["uri"])
        version = ident["version"]
        if doc is not None and isinstance(version, int) and version != doc.version:
            reasons.append(f"{ident['uri']} is at version {doc.version}, the edit was made for version {version}")
    return reasons
