"""Notebook documents are refused: the daemon cannot share them, so it does not pretend to.

A notebook's cells are text documents the server sees only through the
`notebookDocument/*` notifications; sharing one between clients would need
the reference counting and edit application the daemon does for text
documents, per cell. Until then the daemon never offers `notebookDocumentSync`
to a client and, if a client sends a notebook notification anyway, drops it,
logs it and tells that client once per notebook, so nothing half-works silently
and no other client's view of the server changes.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from msgspec import Raw

from lensmux.daemon.wire import envelope as ev

if TYPE_CHECKING:
    from lensmux.daemon.mux.clients.client_session import ClientSession

log = logging.getLogger(__name__)

PREFIX = "notebookDocument/"
_WARNING = 2


def is_notebook_sync(method: str) -> bool:
    """Whether a client notification is notebook document sync."""
    return method.startswith(PREFIX)


def refuse(client: ClientSession, method: str, params: Any) -> None:
    """Drop a notebook notification; tell the client on didOpen."""
    doc = params.get("notebookDocument") if isinstance(params, dict) else None
    uri = doc.get("uri") if isinstance(doc, dict) else None
    log.info("%s: %s %s refused: notebooks are not shared through lensmux", client.name, method, uri)
    if method != "notebookDocument/didOpen":
        return
    message = (
        f"lensmux does not share notebook documents; {uri} is not sent to the language server. "
        "Open the notebook's code as a plain file, or run the server directly for notebooks."
    )
    client.send(ev.notification("window/showMessage", ev.encode_value({"type": _WARNING, "message": message})))


def without_notebook_sync(result: Raw) -> Raw:
    """The server's InitializeResult without `notebookDocumentSync`, which clients cannot use through the daemon."""
    if b"notebookDocumentSync" not in bytes(result):
        return result
    value = ev.decode_value(result)
    caps = value.get("capabilities") if isinstance(value, dict) else None
    if isinstance(caps, dict):
        caps.pop("notebookDocumentSync", None)
    return ev.encode_value(value)
