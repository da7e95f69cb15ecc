"""Open documents of one instance, shared by its clients and reference-counted.

The server sees one document per URI with strictly increasing versions of the
daemon's own numbering, whichever client edits; each client keeps its own
version numbers, mapped back where the server reports versions.

Positions in a client's didChange are in that client's encoding; the store
applies them there and forwards them in the server's (`server_encoding`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from lensmux.daemon.mux.documents.positions import DEFAULT_ENCODING, UTF16
from lensmux.daemon.mux.documents.textedit import translate_changes
from lensmux.daemon.paths import file_key

# The holder id the daemon itself uses when it opens a document (indexing, search).
INTERNAL_HOLDER = 0
# How many of a client's past versions are remembered, to name the version an
# answer computed on older text had in that client's numbering.
_HISTORY = 64


@dataclass(slots=True)
class Document:
    """One open document as the server sees it."""

    uri: str
    language_id: str
    text: str
    version: int
    holders: dict[int, int] = field(default_factory=dict)  # client id -> client's version
    # client id -> [(daemon version, client version from then on)], oldest first.
    history: dict[int, list[tuple[int, int]]] = field(default_factory=dict)
    # The disk epoch at which the daemon opened it with the file's text as saved, while that
    # text is unchanged (None otherwise): opening or closing it changes nothing the server knows.
    pristine_epoch: int | None = None

    def set_holder(self, client: int, client_version: int) -> None:
        """Record that `client` calls the current text `client_version`."""
        self.holders[client] = client_version
        seen = self.history.setdefault(client, [])
        seen.append((self.version, client_version))
        del seen[:-_HISTORY]


@dataclass(frozen=True, slots=True)
class ServerNotice:
    """A notification to send to the server as the result of a client's document event."""

    method: str
    params: dict[str, Any]
    # Set when the document's text is the file as saved at this disk epoch: the server's view
    # of the workspace does not change, so cached answers stay valid (Document.pristine_epoch).
    pristine_epoch: int | None = None


class DocumentStore:
    """Reference-counted documents with the daemon's authoritative text."""

    def __init__(self) -> None:
        self._docs: dict[str, Document] = {}
        # What the server's InitializeResult chose; set before every replay.
        self.server_encoding = DEFAULT_ENCODING
        # Every file opened at the server process since its replay, by anyone, closed ones
        # included; and per client, those it opened itself (as `file_key`s). A server that
        # indexes the files opened at it (clangd) answers each client from all of them; the
        # adapter keeps what that client's own opens would have given it (index_scope.py).
        self._at_server: set[str] = set()
        self._opened_by: dict[int, set[str]] = {}

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

    def opened_at_server(self) -> set[str]:
        """Files (`file_key`s) opened at the server process, by any client or the daemon, closed ones included."""
        return self._at_server

    def opened_by(self, client: int) -> set[str]:
        """Files (`file_key`s) `client` opened since the server process started (or it joined), closed ones included."""
        return self._opened_by.get(client, set())

    def open(
        self, client: int, params: dict[str, Any], *, disk_text: str | None = None, disk_epoch: int | None = None
    ) -> list[ServerNotice]:
        """A client's didOpen; opens on the server only for the first holder.

        When the newcomer's text differs from the open one, its text wins
        unless it is just `disk_text` (the file as saved) while the open
        document has unsaved edits: opening a file never reverts them.
        `disk_epoch`: `disk_text` was read at that disk epoch; a first open with
        exactly that text is pristine, as the daemon's own opens are.
        """
        item = params["textDocument"]
        uri, text = item["uri"], item.get("text", "")
        client_version = int(item.get("version", 0))
        key = file_key(uri)
        self._opened_by.setdefault(client, set()).add(key)
        doc = self._docs.get(uri)
        if doc is None:
            pristine = disk_epoch if disk_text is not None and text == disk_text else None
            doc = Document(uri, item.get("languageId", ""), text, 1, pristine_epoch=pristine)
            doc.set_holder(client, client_version)
            self._docs[uri] = doc
            self._at_server.add(key)
            return [ServerNotice("textDocument/didOpen", self._open_params(doc), pristine)]
        if doc.text == text or (disk_text is not None and text == disk_text):
            doc.set_holder(client, client_version)
            return []
        # The newcomer carries edits of its own (or a reload): its view wins,
        # sent as a full-text change.
        doc.text = text
        doc.pristine_epoch = None
        doc.version += 1
        doc.set_holder(client, client_version)
        return [ServerNotice("textDocument/didChange", self._full_change(doc))]

    def open_internal(
        self, uri: str, language_id: str, text: str, *, disk_epoch: int | None = None
    ) -> list[ServerNotice]:
        """The daemon's own open: never changes a text an editor already has open.

        `disk_epoch`: `text` is the file as read from disk at that epoch.
        """
        doc = self._docs.get(uri)
        if doc is not None:
            doc.holders.setdefault(INTERNAL_HOLDER, 0)
            return []
        doc = Document(uri, language_id, text, 1, {INTERNAL_HOLDER: 0}, pristine_epoch=disk_epoch)
        self._docs[uri] = doc
        self._at_server.add(file_key(uri))
        return [ServerNotice("textDocument/didOpen", self._open_params(doc), disk_epoch)]

    def refresh_internal(self, uri: str, text: str, *, disk_epoch: int | None = None) -> list[ServerNotice]:
        """Bring a document only the daemon holds up to `text` (the file changed since it was opened).

        A text an editor has open is never changed; `disk_epoch` as in open_internal.
        """
        doc = self._docs.get(uri)
        if doc is None or set(doc.holders) != {INTERNAL_HOLDER}:
            return []
        if doc.text == text:
            if disk_epoch is not None:
                doc.pristine_epoch = disk_epoch
            return []
        doc.text = text
        doc.version += 1
        doc.pristine_epoch = disk_epoch
        return [ServerNotice("textDocument/didChange", self._full_change(doc))]

    def change(self, client: int, params: dict[str, Any], encoding: str = UTF16) -> list[ServerNotice]:
        """A client's didChange (ranges in `encoding`), applied here and forwarded with the
        daemon's version and the server's encoding."""
        ident = params["textDocument"]
        doc = self._docs.get(ident["uri"])
        if doc is None:
            return []
        changes = params.get("contentChanges", [])
        doc.text, changes, clamped = translate_changes(doc.text, changes, encoding, self.server_encoding)
        doc.version += 1
        doc.pristine_epoch = None
        if client in doc.holders or "version" in ident:
            doc.set_holder(client, int(ident.get("version", doc.holders.get(client, 0))))
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
        doc.history.pop(client, None)
        if doc.holders:
            return []
        del self._docs[uri]
        return [ServerNotice("textDocument/didClose", {"textDocument": {"uri": uri}}, doc.pristine_epoch)]

    def drop_client(self, client: int) -> list[ServerNotice]:
        """Close everything a departing client held."""
        out: list[ServerNotice] = []
        for doc in [d for d in self._docs.values() if client in d.holders]:
            out.extend(self.close(client, doc.uri))
        self._opened_by.pop(client, None)
        return out

    def replay(self) -> list[ServerNotice]:
        """didOpen for every document, for a restarted server."""
        # The new process has seen only what is open now: that is all anyone opened at it.
        self._at_server = {file_key(uri) for uri in self._docs}
        self._opened_by = {
            client: {file_key(uri) for uri, doc in self._docs.items() if client in doc.holders}
            for client in self._opened_by
        }
        return [ServerNotice("textDocument/didOpen", self._open_params(d)) for d in self.all()]

    def client_version(self, uri: str, client: int, server_version: int | None) -> int | None:
        """The client's version matching the server's, if it is the current one."""
        doc = self._docs.get(uri)
        if doc is None or server_version is None or server_version != doc.version:
            return None
        return doc.holders.get(client)

    def client_version_at(self, uri: str, client: int, server_version: int | None) -> int | None:
        """The client's own number for the daemon's `server_version` of `uri`.

        None when the client does not have the document open (or the server
        named no version); for an older version, the number the client gave
        the text then, so that it can tell the answer is out of date.
        """
        doc = self._docs.get(uri)
        if doc is None or server_version is None or client not in doc.holders:
            return None
        if server_version >= doc.version:
            return doc.holders[client]
        earlier = [cv for dv, cv in doc.history.get(client, []) if dv <= server_version]
        return earlier[-1] if earlier else None

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
