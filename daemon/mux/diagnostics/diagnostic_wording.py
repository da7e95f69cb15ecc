"""Diagnostics worded for each client as the server alone would word them; code actions mapped back.

Some servers word a diagnostic by what the client declared (clangd folds its
notes into the message for a client without `relatedInformation`). The shared
server words them once, for the daemon's capabilities, and the adapter rewords
them per client (`diagnostics_for_client`). A client hands its wording back in
`textDocument/codeAction`'s context, where the server knows only its own: the
daemon remembers which server diagnostic each reworded one came from,
translates the context on the way in and the actions' diagnostics on the way out.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from msgspec import Raw

from lensmux.daemon.wire import envelope as ev

if TYPE_CHECKING:
    from lensmux.daemon.mux.clients.client_session import ClientSession
    from lensmux.daemon.mux.instance import Instance

CODE_ACTION = "textDocument/codeAction"
# A diagnostic's identity as a client hands it back: its range and message (clients may
# reorder keys or drop fields they do not know).
_Key = tuple[int, int, int, int, str]


def _key(diag: Any) -> _Key | None:
    if not isinstance(diag, dict) or not isinstance(diag.get("range"), dict):
        return None
    start, end = diag["range"].get("start") or {}, diag["range"].get("end") or {}
    try:
        return (
            int(start["line"]),
            int(start["character"]),
            int(end["line"]),
            int(end["character"]),
            str(diag["message"]),
        )
    except (KeyError, TypeError, ValueError):
        return None


def for_client(instance: Instance, client: ClientSession, uri: str, diagnostics: list[Any]) -> list[Any]:
    """`diagnostics` of `uri` as `client` is shown them, remembering where each came from."""
    pairs = instance.adapter.diagnostics_for_client(uri, diagnostics, client.capabilities)
    if pairs is None:
        return diagnostics
    table = instance.diagnostics.worded.setdefault(client.id, {})
    table[uri] = {k: server for shown, server in pairs if (k := _key(shown)) is not None}
    return [shown for shown, _ in pairs]


def forget(instance: Instance, client_id: int, uri: str | None = None) -> None:
    """The client closed `uri` (or left): its wording of it is void."""
    worded = instance.diagnostics.worded
    if uri is None:
        worded.pop(client_id, None)
    elif client_id in worded:
        worded[client_id].pop(uri, None)


def rewords(instance: Instance, client: ClientSession, method: str) -> bool:
    """Whether a request of `client` may carry diagnostics in its own wording (checked before decoding)."""
    return method == CODE_ACTION and bool(instance.diagnostics.worded.get(client.id))


def context_to_server(instance: Instance, client: ClientSession, params: Raw) -> tuple[Raw, dict[_Key, Any]]:
    """codeAction params with the context's diagnostics as the server worded them; and the way back."""
    value = ev.decode_value(params)
    context = value.get("context") if isinstance(value, dict) else None
    doc = value.get("textDocument") if isinstance(value, dict) else None
    uri = doc.get("uri") if isinstance(doc, dict) else None
    table = instance.diagnostics.worded.get(client.id, {}).get(uri) if isinstance(uri, str) else None
    if not table or not isinstance(context, dict) or not isinstance(context.get("diagnostics"), list):
        return params, {}
    back: dict[_Key, Any] = {}
    translated = []
    for diag in context["diagnostics"]:
        server = table.get(k) if (k := _key(diag)) is not None else None
        if server is None:
            translated.append(diag)
            continue
        translated.append(server)
        server_key = _key(server)
        if server_key is not None:
            # The server answers each action with the context diagnostic it matched: the last
            # one the client sent of those that came from this server diagnostic, as the
            # server alone keeps the last of the context diagnostics it maps to one of its own.
            back[server_key] = diag
    context["diagnostics"] = translated
    return ev.encode_value(value), back


def result_to_client(result: Raw, back: dict[_Key, Any]) -> Raw:
    """The actions' diagnostics in the client's wording."""
    value = ev.decode_value(result)
    if not isinstance(value, list):
        return result
    for action in value:
        if isinstance(action, dict) and isinstance(action.get("diagnostics"), list):
            action["diagnostics"] = [back.get(k, d) if (k := _key(d)) is not None else d for d in action["diagnostics"]]
    return ev.encode_value(value)
