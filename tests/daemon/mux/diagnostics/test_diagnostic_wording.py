"""Each client sees diagnostics worded as the server alone words them for it, and its code actions still match."""

from __future__ import annotations

import json
from typing import Any

from adapters.test_clangd_wording import STRUCTURED, URI
from daemon.mux.mux_stubs import StubInstance, stub

from lensmux.adapters.clangd.clangd import ClangdAdapter
from lensmux.adapters.spec import ServerConfig
from lensmux.daemon.mux.diagnostics import diagnostic_wording, diagnostics
from lensmux.daemon.wire import envelope as ev

EGLOT = {"textDocument": {"publishDiagnostics": {"relatedInformation": False}}}
NEOVIM = {"textDocument": {"publishDiagnostics": {"relatedInformation": True}}}


def _clangd(*clients: Any) -> Any:
    inst: Any = StubInstance(*clients, adapter=ClangdAdapter(ServerConfig(name="clangd", command="clangd")))
    for client in clients:
        inst.documents.open(client.id, {"textDocument": {"uri": URI, "languageId": "c", "version": 1, "text": ""}})
    diagnostics.on_publish(inst, ev.encode_value({"uri": URI, "version": 1, "diagnostics": [STRUCTURED]}))
    return inst


def test_each_client_is_pushed_its_own_wording() -> None:
    eglot, neovim = stub(1, EGLOT), stub(2, NEOVIM)
    _clangd(eglot, neovim)
    [for_eglot] = eglot.of("textDocument/publishDiagnostics")
    [for_neovim] = neovim.of("textDocument/publishDiagnostics")
    assert for_neovim["diagnostics"] == [STRUCTURED]
    assert len(for_eglot["diagnostics"]) == 2
    assert all("relatedInformation" not in d for d in for_eglot["diagnostics"])


def test_code_action_context_goes_to_the_server_in_its_wording_and_comes_back_in_the_clients() -> None:
    eglot = stub(1, EGLOT)
    inst = _clangd(eglot)
    main, note = eglot.of("textDocument/publishDiagnostics")[0]["diagnostics"]
    assert diagnostic_wording.rewords(inst, eglot, "textDocument/codeAction")
    params = {"textDocument": {"uri": URI}, "range": main["range"], "context": {"diagnostics": [main, note]}}
    sent, back = diagnostic_wording.context_to_server(inst, eglot, ev.encode_value(params))
    # The server gets its own diagnostic for each (it knows no other wording).
    assert json.loads(bytes(sent))["context"]["diagnostics"] == [STRUCTURED, STRUCTURED]
    answer = [{"title": "fix", "kind": "quickfix", "diagnostics": [STRUCTURED]}]
    shown = json.loads(bytes(diagnostic_wording.result_to_client(ev.encode_value(answer), back)))
    # Like clangd alone: each action names the last context diagnostic that stood for that one.
    assert shown[0]["diagnostics"] == [note]


def test_a_client_that_closed_or_left_has_no_wording_left() -> None:
    eglot = stub(1, EGLOT)
    inst = _clangd(eglot)
    diagnostics.closed(inst, eglot, URI, last=True)
    assert not diagnostic_wording.rewords(inst, eglot, "textDocument/codeAction")
    inst.diagnostics.forget_client(eglot.id)
    assert eglot.id not in inst.diagnostics.worded
