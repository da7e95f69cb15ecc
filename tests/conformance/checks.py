"""Protocol rules a client's transcript must keep whatever the server says: registrations in
force, refresh requests and progress only as the client declared them, which notifications arrive.
"""

from __future__ import annotations

from typing import Any

from support.lspclient import LspClient

from conformance.profiles import Profile
from conformance.transcript import Transcript, sorted_unique

REFRESH_CAPABILITY = {
    "workspace/diagnostic/refresh": ("workspace", "diagnostics"),
    "workspace/semanticTokens/refresh": ("workspace", "semanticTokens"),
    "workspace/inlayHint/refresh": ("workspace", "inlayHint"),
    "workspace/inlineValue/refresh": ("workspace", "inlineValue"),
    "workspace/codeLens/refresh": ("workspace", "codeLens"),
}

NOISE = frozenset({"$/progress", "window/workDoneProgress/create", "window/logMessage"})


def record_registrations(transcript: Transcript, client: LspClient) -> None:
    """The server's registrations in force for this client at the end (ids are the server's to pick)."""
    live: dict[str, Any] = {}
    for method, params in client.server_requests:
        if method == "client/registerCapability":
            for reg in params.get("registrations", []):
                live[reg["id"]] = {"method": reg["method"], "registerOptions": reg.get("registerOptions")}
        elif method == "client/unregisterCapability":
            for reg in params.get("unregisterations", params.get("unregistrations", [])):
                live.pop(reg.get("id"), None)
    transcript.record("registrations", "registrations in force at the end", sorted_unique(list(live.values())))


def record_protocol_checks(transcript: Transcript, client: LspClient, profile: Profile, server: str) -> None:
    """Registrations kept as the server made them; refreshes and progress only as declared."""
    refreshes: list[str] = []
    created: set[Any] = set()
    for method, params in client.server_requests:
        if method == "window/workDoneProgress/create":
            created.add(_hashable(params.get("token")))
        elif method in REFRESH_CAPABILITY:
            declared = profile.declares(server, *REFRESH_CAPABILITY[method])
            if not (isinstance(declared, dict) and declared.get("refreshSupport") is True):
                refreshes.append(method)
    record_registrations(transcript, client)
    transcript.record("registrations", "refresh requests the client never declared", sorted(set(refreshes)))
    supplied = {
        _hashable(m["params"].get(key))
        for m in client.sent_messages
        if isinstance(m.get("params"), dict)
        for key in ("workDoneToken", "partialResultToken")
        if key in m["params"]
    }
    stray = [
        p for m, p in client.notifications if m == "$/progress" and _hashable(p.get("token")) not in created | supplied
    ]
    transcript.record("progress", "$/progress on tokens never created for or given by this client", len(stray))
    kinds = {m for m, _ in client.notifications if m not in NOISE and m != "window/showMessage"}
    transcript.record("notifications", "kinds of notification received", sorted(kinds))
    requests = sum(1 for m in client.sent_messages if "method" in m and "id" in m)
    creates = sum(1 for m, _ in client.server_requests if m == "window/workDoneProgress/create")
    transcript.record("progress", "more progress created than requests sent", creates > requests)
    undeclared = bool(created) and not profile.declares(server, "window", "workDoneProgress")
    transcript.record("progress", "progress created though the client did not declare it", undeclared)


def _hashable(token: Any) -> Any:
    return token if isinstance(token, str | int) else repr(token)
