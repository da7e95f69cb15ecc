"""Request first: an agent's question on a file it has just opened goes to the server before the open.

Agents open a file, ask one question on it and close it when answered (SolidLSP's
open_file). pyright schedules a check of a file 5 ms after its didOpen and holds each
outgoing message one event-loop turn, so on a warm server the check of the just-opened
file (36-57 ms) runs before the answer is written (issue 21, docs/benchmarks.md). A
server that reads unopened files from disk (the adapter's
`opening_saved_files_changes_answers` is False) answers a read-only question on a file
whose opened text is the file as saved exactly as it would with the file open, so the
daemon may forward such a question first and the didOpen once pyright has answered it:
the check then runs after the answer. (Sent right after the question, the didOpen is read
while pyright computes the references, which yields to its event loop, and its check still
ran before the answer was written: measured, docs/benchmarks.md.)

Only when the didOpen would be forwarded (first opener at the instance), its text is
the saved file, and the same client's very next message, already read or arriving
within `request_first_window`, is a request on that uri from `READ_ONLY`. Anything
else keeps its order. While the didOpen waits for the answer (at most
`request_first_hold`), that client's later messages wait behind it; other clients' do not.

What the client is told stays as with its own server: alone it would hear the file's
diagnostics (from the check) and then the empty set (from its didClose). Its didClose
of that uri is held until the server has published for the uri after the forwarded
didOpen (or `request_first_hold` passed), or the server, closing the file before
checking it, would publish only the empty set.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import anyio
from msgspec import UNSET

from lensmux.daemon.wire import envelope as ev
from lensmux.daemon.wire.envelope import Envelope

if TYPE_CHECKING:
    from lensmux.daemon.mux.clients.client_session import ClientSession
    from lensmux.daemon.mux.instance import Instance

log = logging.getLogger(__name__)

OPEN = "textDocument/didOpen"
# Requests whose answer from pyright does not depend on the file being open when its text is
# the saved file: pyright resolves them from the program, which reads an unopened file from disk.
# Not on it: pull diagnostics (of an unopened file: none), completion (its context is the open
# buffer), anything that edits.
READ_ONLY = frozenset(
    {
        "textDocument/references",
        "textDocument/definition",
        "textDocument/declaration",
        "textDocument/typeDefinition",
        "textDocument/implementation",
        "textDocument/hover",
        "textDocument/documentHighlight",
        "textDocument/documentSymbol",
        "textDocument/prepareCallHierarchy",
        "textDocument/prepareTypeHierarchy",
    }
)


async def window(
    instance: Instance, client: ClientSession, env: Envelope, disk_text: Callable[[Any], Awaitable[str | None]]
) -> float | None:
    """How long the didOpen `env` may wait for a question to go before it; None: forward it now.

    `disk_text` reads a file URI's saved text (routing's reader, so both read alike).
    """
    wait = instance.daemon_config.request_first_window
    if wait < 0 or instance.adapter.opening_saved_files_changes_answers or env.params is UNSET:
        return None
    # The uri alone first: most opens are not of a bound file nobody holds, and their text
    # (a whole file) is then never built here.
    uri = ev.document_uri(env.params)
    # Only a file this server process has parsed and bound unopened (the bind walk's, or the
    # index run's documentSymbol): pyright tracks it, so it answers for it unopened as opened.
    # pyright answers a question on a file it does not track (not yet discovered, or outside its
    # include) only once the file is opened: documentSymbol `[]`, references without it.
    if uri is None or instance.documents.get(uri) is not None or uri not in instance.warmup.bind_walk.bound:
        return None
    text = ev.decode_value(env.params)["textDocument"].get("text")
    if not isinstance(text, str) or text != await disk_text(uri):
        return None
    # Read again after the await: another client may have opened it meanwhile.
    return wait if instance.documents.get(uri) is None else None


def goes_first(instance: Instance, client: ClientSession, open_env: Envelope, nxt: Envelope) -> bool:
    """Whether the client's next message `nxt` is a question to forward before its didOpen `open_env`."""
    if nxt.id is UNSET or nxt.method not in READ_ONLY or nxt.params is UNSET or open_env.params is UNSET:
        return False
    uri = ev.document_uri(open_env.params)
    if uri is None or uri != ev.document_uri(nxt.params):
        return False
    log.debug("%s: %s's %s on %s goes before its didOpen", instance.name, client.name, nxt.method, uri)
    # From now until the server publishes for it, the client's didClose of the uri waits.
    instance.diagnostics.request_first.add((client.id, uri))
    return True


async def hold_close(instance: Instance, client: ClientSession, uri: str) -> None:
    """Before the client's didClose of `uri`: wait for the server's publish after a reordered open."""
    store = instance.diagnostics
    key = (client.id, uri)
    if key not in store.request_first:
        return
    # The didOpen cleared the uri's last publish (diagnostics.opened): the next one is the check's.
    with anyio.move_on_after(instance.daemon_config.request_first_hold) as scope:
        while store.latest.get(uri) is None:
            await store.changed.wait()
    store.request_first.discard(key)
    if scope.cancelled_caught:
        log.info(
            "%s: no diagnostics for %s within %.1fs of its reordered open; %s's didClose goes now",
            instance.name,
            uri,
            instance.daemon_config.request_first_hold,
            client.name,
        )
