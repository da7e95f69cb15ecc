"""Pull diagnostics (`textDocument/diagnostic`, `workspace/diagnostic`), answered by the daemon.

The server only pushes (adapters/capabilities.py); a pull client is answered
from the same store push clients are fed from (diagnostics.py). A pull for a
document whose current version the server has not published yet waits for
that publish, as a pull-mode server would wait for its analysis, up to the
method's timeout, and is then answered with what is known.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from lensmux.daemon.mux.diagnostics.diagnostic_wording import for_client
from lensmux.daemon.wire.envelope import ErrorCode

if TYPE_CHECKING:
    from lensmux.daemon.mux.clients.client_session import ClientSession
    from lensmux.daemon.mux.diagnostics.diagnostics import Published
    from lensmux.daemon.mux.instance import Instance

DOCUMENT_PULL = "textDocument/diagnostic"
PULL_METHODS = frozenset({DOCUMENT_PULL, "workspace/diagnostic"})
# The result id of "nothing published": a client holding it gets a full report once there is something.
_NOTHING = "lensmux-0"


@dataclass(slots=True)
class ParkedPull:
    """A pull that waits for the server to publish for the document's current version."""

    client: ClientSession
    request_id: Any
    previous_result_id: str | None
    started: float


def diagnostic_provider() -> dict[str, Any]:
    """The `diagnosticProvider` a pull client is told of (the daemon serves it)."""
    # workspaceDiagnostics stays false: the daemon would answer a workspace pull at
    # once, and clients re-ask as soon as they are answered.
    return {"identifier": "lensmux", "interFileDependencies": True, "workspaceDiagnostics": False}


def handle(instance: Instance, client: ClientSession, request_id: Any, method: str, params: Any) -> None:
    """Answer one pull request from a client."""
    if not isinstance(params, dict):
        client.reply_error(request_id, ErrorCode.INVALID_PARAMS, f"{method} needs params")
        return
    if method == "workspace/diagnostic":
        client.reply(request_id, _workspace_report(instance, client, params))
        return
    doc = params.get("textDocument")
    uri = doc.get("uri") if isinstance(doc, dict) else None
    if not isinstance(uri, str):
        client.reply_error(request_id, ErrorCode.INVALID_PARAMS, "textDocument/diagnostic needs textDocument.uri")
        return
    previous = params.get("previousResultId") if isinstance(params.get("previousResultId"), str) else None
    if _behind(instance, uri):
        instance.diagnostics.parked.setdefault(uri, []).append(
            ParkedPull(client, request_id, previous, time.monotonic())
        )
        return
    client.reply(request_id, _report(instance, client, uri, previous))


def _behind(instance: Instance, uri: str) -> bool:
    """The document is open and the server has not published for its current text yet."""
    doc = instance.documents.get(uri)
    if doc is None or not instance.ready:
        return False
    entry = instance.diagnostics.latest.get(uri)
    return entry is None or (entry.version is not None and entry.version < doc.version)


def _report(instance: Instance, client: ClientSession, uri: str, previous: str | None) -> dict[str, Any]:
    entry = instance.diagnostics.latest.get(uri)
    result_id = entry.result_id if entry is not None else _NOTHING
    instance.diagnostics.shown.setdefault(uri, {})[client.id] = result_id
    if previous == result_id:
        return {"kind": "unchanged", "resultId": result_id}
    items = for_client(instance, client, uri, entry.diagnostics) if entry is not None else []
    return {"kind": "full", "resultId": result_id, "items": items}


def _workspace_report(instance: Instance, client: ClientSession, params: dict[str, Any]) -> dict[str, Any]:
    previous = {p.get("uri"): p.get("value") for p in params.get("previousResultIds") or [] if isinstance(p, dict)}
    items = []
    for entry in list(instance.diagnostics.latest.values()):
        if not entry.diagnostics and entry.uri not in previous:
            continue
        item = _workspace_item(instance, client, entry, previous.get(entry.uri))
        items.append(item)
    return {"items": items}


def _workspace_item(instance: Instance, client: ClientSession, entry: Published, previous: Any) -> dict[str, Any]:
    version = None
    if entry.version is not None:
        version = instance.documents.client_version(entry.uri, client.id, entry.version)
    instance.diagnostics.shown.setdefault(entry.uri, {})[client.id] = entry.result_id
    if previous == entry.result_id:
        return {"kind": "unchanged", "uri": entry.uri, "version": version, "resultId": entry.result_id}
    return {
        "kind": "full",
        "uri": entry.uri,
        "version": version,
        "resultId": entry.result_id,
        "items": for_client(instance, client, entry.uri, entry.diagnostics),
    }


def answer_parked(instance: Instance, uri: str) -> set[int]:
    """Answer the pulls waiting on `uri` now that the server published; return their clients."""
    if _behind(instance, uri):
        return set()
    pulls = instance.diagnostics.parked.pop(uri, [])
    for pull in pulls:
        if pull.client.id in instance.clients:
            pull.client.reply(pull.request_id, _report(instance, pull.client, uri, pull.previous_result_id))
    return {p.client.id for p in pulls}


def expire_parked(instance: Instance) -> None:
    """Answer, with what is known, pulls that waited longer than their timeout."""
    limit = instance.config.timeouts.for_method("textDocument/diagnostic")
    now = time.monotonic()
    for uri, pulls in list(instance.diagnostics.parked.items()):
        due = [p for p in pulls if now - p.started >= limit or uri_closed(instance, uri)]
        if not due:
            continue
        pulls[:] = [p for p in pulls if p not in due]
        if not pulls:
            del instance.diagnostics.parked[uri]
        for pull in due:
            pull.client.reply(pull.request_id, _report(instance, pull.client, uri, pull.previous_result_id))


def uri_closed(instance: Instance, uri: str) -> bool:
    """Nobody holds `uri` any more: the server will not publish for it."""
    return instance.documents.get(uri) is None


def cancel_parked(instance: Instance, client: ClientSession, request_id: Any) -> bool:
    """A client cancelled a waiting pull: answer it as cancelled; False if it was not one."""
    for uri, pulls in list(instance.diagnostics.parked.items()):
        for pull in pulls:
            if pull.client is client and pull.request_id == request_id:
                pulls.remove(pull)
                if not pulls:
                    del instance.diagnostics.parked[uri]
                client.reply_error(request_id, ErrorCode.REQUEST_CANCELLED, "request cancelled")
                return True
    return False
