"""A client the server alone would serve in pull mode through a dynamic registration (pyright and VS Code)."""

from __future__ import annotations

import json
import time
from typing import Any

from daemon.mux.mux_stubs import PUSH, StubInstance, stub
from msgspec import Raw

from lensmux.adapters.pyright.pyright import PyrightAdapter
from lensmux.adapters.spec import ServerConfig
from lensmux.daemon.mux.diagnostics import diagnostics, diagnostics_nudge
from lensmux.daemon.mux.views.client_view import initialize_result_for
from lensmux.daemon.mux.workspace import registrations
from lensmux.daemon.wire import envelope as ev

URI = "file:///p/a.py"
# What VS Code declares: pull diagnostics, registered dynamically.
DYNAMIC_PULL = {"textDocument": {"diagnostic": {"dynamicRegistration": True, "relatedInformation": True}}}
# What Neovim 0.10 declares: pull diagnostics, but no dynamic registration.
STATIC_PULL = {"textDocument": {"diagnostic": {"dynamicRegistration": False}}}


def _pyright(*clients: Any, pull_diagnostics: bool = False) -> Any:
    config = ServerConfig(name="pyright", command="pyright-langserver", pull_diagnostics=pull_diagnostics)
    inst = StubInstance(*clients, adapter=PyrightAdapter(config))
    inst.config.pull_diagnostics = pull_diagnostics
    return inst


def _registered(client: Any) -> list[dict[str, Any]]:
    return [r for p in client.of("client/registerCapability") for r in p["registrations"]]


def test_pyright_registers_pull_for_a_client_declaring_dynamic_registration_only() -> None:
    vscode, neovim, eglot = stub(1, DYNAMIC_PULL), stub(2, STATIC_PULL), stub(3, PUSH)
    inst = _pyright(vscode, neovim, eglot)
    for client in (vscode, neovim, eglot):
        registrations.replay(inst, client)
    [pull] = _registered(vscode)
    assert pull["method"] == "textDocument/diagnostic"
    assert pull["registerOptions"] == {
        "interFileDependencies": True,
        "workspaceDiagnostics": False,
        "documentSelector": None,
        "identifier": "Pyright",
    }
    assert _registered(neovim) == [] and _registered(eglot) == []
    assert diagnostics.pulls(inst, vscode)
    assert not diagnostics.pulls(inst, neovim) and not diagnostics.pulls(inst, eglot)


def test_a_client_that_disables_pull_in_its_initialization_options_is_pushed_to() -> None:
    vscode = stub(1, DYNAMIC_PULL)
    vscode.initialization_options = {"disablePullDiagnostics": True}
    inst = _pyright(vscode)
    registrations.replay(inst, vscode)
    assert _registered(vscode) == []
    assert not diagnostics.pulls(inst, vscode)


def test_its_pulls_go_to_the_server_and_its_initialize_result_offers_no_static_provider() -> None:
    vscode = stub(1, DYNAMIC_PULL)
    inst = _pyright(vscode)
    assert diagnostics.server_answers_pull(inst, vscode, "textDocument/diagnostic")
    # Workspace pulls stay with the daemon (the registration says workspaceDiagnostics: false).
    assert not diagnostics.server_answers_pull(inst, vscode, "workspace/diagnostic")
    inst.init_result = Raw(b'{"capabilities": {"hoverProvider": true, "diagnosticProvider": {}}}')
    inst.adapter.prepare_rename_follows_client_caps = False
    caps = json.loads(bytes(initialize_result_for(inst, vscode)))["capabilities"]
    assert "diagnosticProvider" not in caps and caps["hoverProvider"] is True


def test_configured_static_pull_wins_over_the_registration() -> None:
    vscode = stub(1, DYNAMIC_PULL)
    inst = _pyright(vscode, pull_diagnostics=True)
    registrations.replay(inst, vscode)
    assert _registered(vscode) == []
    assert diagnostics.pulls(inst, vscode)
    assert not diagnostics.server_answers_pull(inst, vscode, "textDocument/diagnostic")


def test_closing_clears_the_pull_clients_document_as_pyright_alone_does() -> None:
    vscode = stub(1, DYNAMIC_PULL)
    inst = _pyright(vscode)
    inst.documents.open(vscode.id, {"textDocument": {"uri": URI, "languageId": "python", "version": 3, "text": ""}})
    inst.documents.close(vscode.id, URI)
    diagnostics.closed(inst, vscode, URI, last=True)
    assert vscode.of("textDocument/publishDiagnostics") == [{"uri": URI, "diagnostics": []}]


def test_in_workspace_mode_the_client_is_pushed_every_files_diagnostics_instead() -> None:
    vscode = stub(1, DYNAMIC_PULL)
    config = ServerConfig(
        name="pyright", command="pyright-langserver", settings={"python": {"analysis": {"diagnosticMode": "workspace"}}}
    )
    inst: Any = StubInstance(vscode, adapter=PyrightAdapter(config))
    inst.config.pull_diagnostics = False
    registrations.replay(inst, vscode)
    assert _registered(vscode) == []
    assert not diagnostics.pulls(inst, vscode)


def test_a_document_is_owed_its_diagnostics_only_after_its_own_editor_paused() -> None:
    eglot = stub(1, PUSH)
    inst = _pyright(eglot)
    text = {"textDocument": {"uri": URI, "languageId": "python", "version": 1, "text": "x = 1\n"}}
    inst.documents.open(eglot.id, text)
    diagnostics_nudge.expect(inst, URI, 1)
    since = inst.diagnostics.awaited[URI][1]
    # Its editor changes it again within the wait: the server alone would still be waiting too.
    inst.documents.change(eglot.id, {"textDocument": {"uri": URI, "version": 2}, "contentChanges": [{"text": "x\n"}]})
    inst.diagnostics.awaited[URI] = (2, since + 1.0)
    due, wait = diagnostics_nudge._take_due(inst, since + diagnostics_nudge.NUDGE_AFTER + 0.1)
    assert due == [] and wait is not None
    due, _ = diagnostics_nudge._take_due(inst, since + 1.0 + diagnostics_nudge.NUDGE_AFTER + 0.1)
    assert due == [(URI, 2)]
    # Once the server published for that version, nothing is owed.
    diagnostics_nudge.expect(inst, URI, 2)
    diagnostics.on_publish(inst, ev.encode_value({"uri": URI, "version": 2, "diagnostics": []}))
    due, _ = diagnostics_nudge._take_due(inst, time.monotonic() + 10)
    assert due == []
