"""What one client is told of the shared server: its own InitializeResult.

The server is initialized once, with the daemon's capabilities; every client
gets a result shaped by what it declared itself, so that it sees the server as
if it had it alone.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from msgspec import Raw

from lensmux.daemon.mux.clients.client_caps import declared
from lensmux.daemon.mux.diagnostics.diagnostics import offers_pull_statically
from lensmux.daemon.mux.diagnostics.diagnostics_pull import diagnostic_provider
from lensmux.daemon.mux.documents.positions import announce
from lensmux.daemon.wire import envelope as ev

if TYPE_CHECKING:
    from lensmux.daemon.mux.clients.client_session import ClientSession
    from lensmux.daemon.mux.instance import Instance


def initialize_result_for(instance: Instance, client: ClientSession) -> Raw:
    """The InitializeResult `client` receives, derived from the server's one answer."""
    server_result = instance.init_result
    if server_result is None:
        return ev.NULL
    value = ev.decode_value(server_result)
    if not isinstance(value, dict):
        return server_result
    shaped = _shape(
        value,
        client.capabilities,
        pull=offers_pull_statically(instance, client),
        prepare_follows=instance.adapter.prepare_rename_follows_client_caps,
        code_actions_follow=instance.adapter.code_actions_follow_client_caps,
    )
    return ev.encode_value(shaped)


def _shape(
    result: dict[str, Any],
    client_caps: dict[str, Any],
    *,
    pull: bool,
    prepare_follows: bool = True,
    code_actions_follow: bool = False,
) -> dict[str, Any]:
    """Adjust the server's result to one client's declared capabilities."""
    caps = result.get("capabilities")
    if isinstance(caps, dict):
        caps = dict(caps)
        if (
            code_actions_follow
            and isinstance(caps.get("codeActionProvider"), dict)
            and not declared(client_caps, "textDocument.codeAction.codeActionLiteralSupport")
        ):
            # Without literal support a client can take no kinds: the server alone says just `true`.
            caps["codeActionProvider"] = True
        # Diagnostics are served by the daemon: pulled by the clients it offers pull
        # statically (a pull registration is the other way, registrations.py), pushed to the rest.
        caps.pop("diagnosticProvider", None)
        if pull:
            caps["diagnosticProvider"] = diagnostic_provider()
        rename = caps.get("renameProvider")
        offers_prepare = isinstance(rename, dict) and "prepareProvider" in rename
        if (
            isinstance(rename, dict)
            and offers_prepare
            and prepare_follows
            and declared(client_caps, "textDocument.rename.prepareSupport") is not True
        ):
            # A server offers prepareRename only to clients that declared prepareSupport.
            rest = {k: v for k, v in rename.items() if k != "prepareProvider"}
            caps["renameProvider"] = rest or True
        result = {**result, "capabilities": caps}
    return announce(result, client_caps)
