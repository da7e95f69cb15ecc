"""Cross-file answers as the client's own opens would have made them.

A server that indexes the files opened at it (clangd without a compilation
database) answers Find References from every file any client, or the daemon's
search, ever opened there; a server of the client's own would have known only
the files that client opened. The document store records who opened what at
the current server process (documents.py); the adapter says which answers
depend on it and what the client alone would have been told
(`Adapter.answer_for_opener`). Fresh, coalesced and cached answers alike go
through `for_client`, since the cache holds the shared server's answer.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from msgspec import Raw

from lensmux.daemon.paths import file_key
from lensmux.daemon.wire import envelope as ev

if TYPE_CHECKING:
    from lensmux.daemon.mux.clients.client_session import ClientSession
    from lensmux.daemon.mux.instance import Instance

# Answers that may depend on the files opened at the server: those an index of opened
# files answers. The adapter decides whether its server's do (`scopes_to_opened_files`).
METHODS = frozenset({"textDocument/references", "callHierarchy/incomingCalls"})


def for_client(instance: Instance, client: ClientSession, method: str, result: Raw, asked_uri: str | None) -> Raw:
    """`result` (the shared server's answer to `method` about `asked_uri`) as this client alone would have it."""
    adapter = instance.adapter
    if not adapter.scopes_to_opened_files(method):
        return result
    docs = instance.documents
    mine, at_server = docs.opened_by(client.id), docs.opened_at_server()
    asked = file_key(asked_uri) if asked_uri is not None else None
    shaped = adapter.answer_for_opener(
        method,
        ev.decode_value(result),
        lambda uri: file_key(uri) == asked,
        lambda uri: file_key(uri) in mine,
        lambda uri: file_key(uri) in at_server,
    )
    return result if shaped is None else ev.encode_value(shaped)
