"""Open documents of one instance, shared by its clients and reference-counted.

The server sees one document per URI with strictly increasing versions of the
daemon's own numbering, whichever client edits; each client keeps its own
version numbers, mapped back where the server reports versions.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from lensmux.daemon.mux.textedit import apply_changes

# The holder id the daemon itself uses when it opens a document (indexing, search).
INTERNAL_HOLDER = 0


@dataclass(slots=True)
class Document:
    """One open document as the server sees it."""

    uri: str
    language_id: str
    text: str
    version: int
    holders: dict[int, int] = field(default_factory=dict)  # client id -> client's version


@dataclass(frozen=True, slots=True)
class ServerNotice:
    """A notification to send to the server as the result of a client's document event."""

    method: str
    params: dict[str, Any]


class DocumentStore:
    """Reference-counted documents with the daemon's authoritative text."""

    def __init__(self) -> None:
        self._docs: dict[str, Document] = {}

    def __len__(self) -> int:
        return len(self._docs)

    def get(self, uri: str) -> Document | None:
        """The open document at `uri`, if any client holds it."""
        return self._docs.get(uri)

    def all(self) -> list[Document]:
        """Every open document."""
        return list(self._docs.values())

    def holders(self, uri: str) -> list[int]:
        """Client ids that have `uri` open."""
        doc = self._docs.get(uri)
        return list(doc.holders) if doc else []

    def open(self, client: int, params: dict[str, Any], *, disk_text: str | None = None) -> list[ServerNotice]:
        """A client's didOpen; opens on the server only for the first holder.

        When the newcomer's text differs from the open one, its text wins
        unless it is just `disk_text` (the file as saved) while the open
        document has unsaved edits: opening a file never reverts them.
        """
        item = params["textDocument"]
        uri, text = item["uri"], item.get("text", "")
        client_version = int(item.get("version", 0))
        doc = self._docs.get(uri)
        if doc is None:
            doc = Document(uri, item.get("languageId", ""), text, 1, {client: client_version})
            self._docs[uri] = doc
            return [ServerNotice("textDocument/didOpen", self._open_params(doc))]
        doc.holders[client] = client_version
        if doc.text == text or (disk_text is not None and text == disk_text):
            return []
        # The newcomer carries edits of its own (or a reload): its view wins,
        # sent as a full-text change.
        doc.text = text
        doc.version += 1
        return [ServerNotice("textDocument/didChange", self._full_change(doc))]

    def open_internal(self, uri: str, language_id: str, text: str) -> list[ServerNotice]:
        """The daemon's own open: never changes a text an editor already has open."""
        doc = self._docs.get(uri)
        if doc is not None:
            doc.holders.setdefault(INTERNAL_HOLDER, 0)
            return []
        doc = Document(uri, language_id, text, 1, {INTERNAL_HOLDER: 0})
        self._docs[uri] = doc
        return [ServerNotice("textDocument/didOpen", self._open_params(doc))]

    def change(self, client: int, params: dict[str, Any]) -> list[ServerNotice]:
        """A client's didChange, applied here and forwarded with the daemon's version."""
        ident = params["textDocument"]
        doc = self._docs.get(ident["uri"])
        if doc is None:
            return []
        changes = params.get("contentChanges", [])
        doc.text, clamped = apply_changes(doc.text, changes)
        doc.version += 1
        if client in doc.holders or "version" in ident:
            doc.holders[client] = int(ident.get("version", doc.holders.get(client, 0)))
        if clamped:
            return [ServerNotice("textDocument/didChange", self._full_change(doc))]
        forwarded = {
            "textDocument": {"uri": doc.uri, "version": doc.version},
            "contentChanges": changes,
        }
        return [ServerNotice("textDocument/didChange", forwarded)]

    def close(self, client: int, uri: str) -> list[ServerNotice]:
        """A client's didClose; closes on the server when the last holder leaves."""
        doc = self._docs.get(uri)
        if doc is None or client not in doc.holders:
            return []
        del doc.holders[client]
        if doc.holders:
            return []
        del self._docs[uri]
        return [ServerNotice("textDocument/didClose", {"textDocument": {"uri": uri}})]

    def drop_client(self, client: int) -> list[ServerNotice]:
        """Close everything a departing client held."""
        out: list[ServerNotice] = []
        for doc in [d for d in self._docs.values() if client in d.holders]:
            out.extend(self.close(client, doc.uri))
        return out

    def replay(self) -> list[ServerNotice]:
        """didOpen for every document, for a restarted server."""
        return [ServerNotice("textDocument/didOpen", self._open_params(d)) for d in self.all()]

    def client_version(self, uri: str, client: int, server_version: int | None) -> int | None:
        """The client's version matching the server's, if it is the current one."""
        doc = self._docs.get(uri)
        if doc is None or server_version is None or server_version != doc.version:
            return None
        return doc.holders.get(client)

    @staticmethod
    def _open_params(doc: Document) -> dict[str, Any]:
        return {
            "textDocument": {
                "uri": doc.uri,
                "languageId": doc.language_id,
                "version": doc.version,
                "text": doc.text,
            }
        }

    @staticmethod
    def _full_change(doc: Document) -> dict[str, Any]:
        return {
            "textDocument": {"uri": doc.uri, "version": doc.version},
            "contentChanges": [{"text": doc.text}],
        }
