"""Diagnostics reach each client in the mode it declared, in its own version numbering."""

from __future__ import annotations

from typing import Any

from daemon.mux.mux_stubs import PULL, PUSH, StubInstance, stub

from lensmux.daemon.mux.diagnostics import diagnostics, diagnostics_pull
from lensmux.daemon.mux.views.client_view import _shape
from lensmux.daemon.wire import envelope as ev

URI = "file:///p/a.py"
ERROR = {"range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 1}}, "message": "bad"}


def _open(inst: Any, client: Any, version: int, text: str = "x = 1\n") -> None:
    shared = inst.documents.get(URI) is not None
    item = {"uri": URI, "languageId": "python", "version": version, "text": text}
    inst.documents.open(client.id, {"textDocument": item})
    diagnostics.opened(inst, client, URI, shared=shared)


def _publish(inst: Any, diags: list[Any], version: int | None = 1) -> None:
    value: dict[str, Any] = {"uri": URI, "diagnostics": diags}
    if version is not None:
        value["version"] = version
    diagnostics.on_publish(inst, ev.encode_value(value))


def test_push_clients_get_the_publish_in_their_numbering_and_pull_clients_do_not() -> None:
    pusher, puller = stub(1, PUSH), stub(2, PULL)
    inst: Any = StubInstance(pusher, puller)
    _open(inst, pusher, 7)
    _open(inst, puller, 3)
    _publish(inst, [ERROR])
    assert pusher.of("textDocument/publishDiagnostics") == [{"uri": URI, "diagnostics": [ERROR], "version": 7}]
    assert puller.of("textDocument/publishDiagnostics") == []


def test_a_late_joiner_gets_the_current_diagnostics_at_once() -> None:
    first, late = stub(1, PUSH), stub(2, PUSH)
    inst: Any = StubInstance(first, late)
    _open(inst, first, 1)
    _publish(inst, [ERROR])
    _open(inst, late, 40)
    assert late.of("textDocument/publishDiagnostics") == [{"uri": URI, "diagnostics": [ERROR], "version": 40}]


def test_a_late_joiner_gets_nothing_stale_when_its_text_changed_the_document() -> None:
    first, late = stub(1, PUSH), stub(2, PUSH)
    inst: Any = StubInstance(first, late)
    _open(inst, first, 1)
    _publish(inst, [ERROR])
    _open(inst, late, 1, text="y = 2\n")
    assert late.of("textDocument/publishDiagnostics") == []


def test_closing_clears_for_the_closer_now_or_with_the_servers_publish() -> None:
    closer, keeper = stub(1, PUSH), stub(2, PUSH)
    inst: Any = StubInstance(closer, keeper)
    _open(inst, closer, 1)
    _open(inst, keeper, 1)
    _publish(inst, [ERROR])
    inst.documents.close(closer.id, URI)
    diagnostics.closed(inst, closer, URI, last=False)
    assert closer.of("textDocument/publishDiagnostics")[-1] == {"uri": URI, "diagnostics": []}
    assert len(keeper.of("textDocument/publishDiagnostics")) == 1
    # The last holder's close: the server's own clearing publish is routed to it.
    inst.documents.close(keeper.id, URI)
    diagnostics.closed(inst, keeper, URI, last=True)
    _publish(inst, [], version=None)
    assert keeper.of("textDocument/publishDiagnostics")[-1] == {"uri": URI, "diagnostics": []}
    assert len(closer.of("textDocument/publishDiagnostics")) == 2


def test_a_clean_document_closed_is_cleared_as_the_server_alone_clears_it() -> None:
    """Shown only an empty set (a clean file), a closer still hears the server's clearing publish."""
    closer, keeper = stub(1, PUSH), stub(2, PUSH)
    inst: Any = StubInstance(closer, keeper)
    _open(inst, keeper, 1)
    _open(inst, closer, 0)
    _publish(inst, [])
    inst.documents.close(closer.id, URI)
    diagnostics.closed(inst, closer, URI, last=False)
    assert closer.of("textDocument/publishDiagnostics")[-1] == {"uri": URI, "diagnostics": []}
    # As the last holder too: the server's own publish after the didClose is routed to it.
    _open(inst, closer, 0)
    inst.documents.close(keeper.id, URI)
    diagnostics.closed(inst, keeper, URI, last=False)
    inst.documents.close(closer.id, URI)
    diagnostics.closed(inst, closer, URI, last=True)
    before = len(closer.of("textDocument/publishDiagnostics"))
    _publish(inst, [], version=None)
    assert closer.of("textDocument/publishDiagnostics")[before:] == [{"uri": URI, "diagnostics": []}]


def test_a_check_published_after_the_last_close_does_not_take_the_clearing_publish() -> None:
    """The server's check of the file, on its way when the last holder's didClose went, and then
    its clearing publish: the closer is told both, as by the server alone."""
    closer = stub(1, PUSH)
    inst: Any = StubInstance(closer)
    _open(inst, closer, 1)
    inst.documents.close(closer.id, URI)
    diagnostics.closed(inst, closer, URI, last=True)
    _publish(inst, [ERROR], version=1)
    _publish(inst, [], version=None)
    told = [p["diagnostics"] for p in closer.of("textDocument/publishDiagnostics")]
    assert told == [[ERROR], []]


def test_a_push_client_joining_later_gets_the_diagnostics_of_files_nobody_holds() -> None:
    early, late, puller = stub(1, PUSH), stub(2, PUSH), stub(3, PULL)
    inst: Any = StubInstance(early)
    _publish(inst, [ERROR], version=None)
    assert early.of("textDocument/publishDiagnostics") == [{"uri": URI, "diagnostics": [ERROR]}]
    inst.clients.update({late.id: late, puller.id: puller})
    diagnostics.attached(inst, late)
    diagnostics.attached(inst, puller)
    assert late.of("textDocument/publishDiagnostics") == [{"uri": URI, "diagnostics": [ERROR]}]
    assert puller.messages == []


def test_a_pull_client_closing_a_document_is_not_pushed_to() -> None:
    puller, keeper = stub(1, PULL), stub(2, PUSH)
    inst: Any = StubInstance(puller, keeper)
    _open(inst, puller, 1)
    _open(inst, keeper, 1)
    _publish(inst, [ERROR])
    diagnostics_pull.handle(inst, puller, 1, "textDocument/diagnostic", {"textDocument": {"uri": URI}})
    inst.documents.close(puller.id, URI)
    diagnostics.closed(inst, puller, URI, last=False)
    assert puller.of("textDocument/publishDiagnostics") == []


def test_clearing_a_document_nobody_was_shown_goes_nowhere() -> None:
    client = stub(1, PUSH)
    inst: Any = StubInstance(client)
    _publish(inst, [], version=None)
    assert client.messages == []


def test_pull_answers_full_then_unchanged_and_waits_for_the_current_version() -> None:
    puller = stub(1, PULL)
    inst: Any = StubInstance(puller)
    _open(inst, puller, 5)
    diagnostics_pull.handle(inst, puller, 1, "textDocument/diagnostic", {"textDocument": {"uri": URI}})
    assert puller.answers() == []  # nothing published for this text yet: it waits
    _publish(inst, [ERROR])
    full = puller.answers()[0]["result"]
    assert full["kind"] == "full" and full["items"] == [ERROR]
    params = {"textDocument": {"uri": URI}, "previousResultId": full["resultId"]}
    diagnostics_pull.handle(inst, puller, 2, "textDocument/diagnostic", params)
    assert puller.answers()[1]["result"] == {"kind": "unchanged", "resultId": full["resultId"]}
    # It was answered and is up to date: no refresh for it.
    assert puller.of("workspace/diagnostic/refresh") == []


def test_pull_clients_with_refresh_support_are_told_when_their_diagnostics_change() -> None:
    puller = stub(1, PULL)
    quiet = stub(2, {"textDocument": {"diagnostic": {}}})
    inst: Any = StubInstance(puller, quiet)
    _open(inst, puller, 1)
    _open(inst, quiet, 1)
    _publish(inst, [])
    for client in (puller, quiet):
        diagnostics_pull.handle(inst, client, 1, "textDocument/diagnostic", {"textDocument": {"uri": URI}})
    _publish(inst, [])
    assert puller.of("workspace/diagnostic/refresh") == []
    _publish(inst, [ERROR])
    assert len(puller.of("workspace/diagnostic/refresh")) == 1
    assert quiet.of("workspace/diagnostic/refresh") == []


def test_a_waiting_pull_can_be_cancelled() -> None:
    puller = stub(1, PULL)
    inst: Any = StubInstance(puller)
    _open(inst, puller, 1)
    diagnostics_pull.handle(inst, puller, 9, "textDocument/diagnostic", {"textDocument": {"uri": URI}})
    assert diagnostics_pull.cancel_parked(inst, puller, 9)
    assert puller.answers()[0]["error"]["code"] == -32800
    assert not diagnostics_pull.cancel_parked(inst, puller, 9)


def test_only_pull_clients_are_offered_pull_diagnostics() -> None:
    server_result = {"capabilities": {"hoverProvider": True, "diagnosticProvider": {"interFileDependencies": False}}}
    assert "diagnosticProvider" not in _shape(server_result, PUSH, pull=False)["capabilities"]
    offered = _shape(server_result, PULL, pull=True)["capabilities"]
    assert offered["diagnosticProvider"]["interFileDependencies"] is True
    assert offered["hoverProvider"] is True
