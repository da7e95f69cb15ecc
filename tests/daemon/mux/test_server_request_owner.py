"""Which client a server request belongs to, and edits told in each client's versions."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import msgspec
import pytest

from lensmux.daemon.mux.documents.documents import DocumentStore
from lensmux.daemon.mux.requests.pending import PendingTable
from lensmux.daemon.mux.server_request_owner import find_cause, route
from lensmux.daemon.mux.views.edits import client_versions, renumber_result, stale_documents
from lensmux.daemon.wire import envelope as ev

URI = "file:///p/a.c"
OTHER = "file:///p/b.c"


class _Instance:
    """The parts of an instance find_cause reads."""

    def __init__(self, *client_ids: int) -> None:
        self.pending = PendingTable()
        self.clients: dict[int, Any] = {cid: SimpleNamespace(id=cid) for cid in client_ids}
        self.fallback: Any = None

    def ask(self, client_id: int, method: str) -> None:
        client: Any = self.clients.get(client_id) or SimpleNamespace(id=client_id)
        self.pending.add_client(method, client, 1)

    def last_active_client(self) -> Any:
        return self.fallback


def _cause(instance: _Instance) -> tuple[int | None, bool]:
    cause = find_cause(instance)  # type: ignore[arg-type]
    return (cause.client.id if cause.client is not None else None), cause.gone


def test_execute_command_outranks_newer_requests_of_other_clients() -> None:
    inst = _Instance(1, 2)
    inst.ask(1, "workspace/executeCommand")
    inst.ask(2, "textDocument/hover")
    inst.ask(2, "textDocument/rename")
    assert _cause(inst) == (1, False)


def test_code_action_outranks_rename_and_the_newest_wins_between_equals() -> None:
    inst = _Instance(1, 2, 3)
    inst.ask(1, "textDocument/rename")
    inst.ask(2, "codeAction/resolve")
    assert _cause(inst) == (2, False)
    inst.ask(3, "textDocument/codeAction")
    assert _cause(inst) == (3, False)


def test_without_a_telling_request_the_newest_in_flight_is_the_cause() -> None:
    inst = _Instance(1, 2)
    inst.ask(2, "textDocument/hover")
    inst.ask(1, "textDocument/definition")
    assert _cause(inst) == (1, False)


def test_a_departed_cause_is_reported_as_gone_not_replaced() -> None:
    inst = _Instance(2)
    inst.ask(1, "workspace/executeCommand")  # client 1 has left
    inst.ask(2, "textDocument/hover")
    assert _cause(inst) == (1, True)


def test_a_departed_clients_plain_request_does_not_claim_the_cause() -> None:
    inst = _Instance(2)
    inst.ask(2, "textDocument/hover")
    inst.ask(1, "textDocument/definition")  # client 1 has left
    assert _cause(inst) == (2, False)


def test_with_nothing_in_flight_the_most_recently_active_client_is_asked() -> None:
    inst = _Instance(1, 2)
    inst.fallback = inst.clients[2]
    assert _cause(inst) == (2, False)


def _store() -> DocumentStore:
    store = DocumentStore()
    store.open(1, {"textDocument": {"uri": URI, "languageId": "c", "version": 10, "text": "a"}})
    store.open(2, {"textDocument": {"uri": URI, "languageId": "c", "version": 3, "text": "a"}})
    change = {"range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}}, "text": "b"}
    store.change(1, {"textDocument": {"uri": URI, "version": 11}, "contentChanges": [change]})
    return store  # the daemon's version 2; client 1 calls it 11, client 2 still 3


def _versioned(uri: str, version: int | None) -> dict[str, Any]:
    return {"textDocument": {"uri": uri, "version": version}, "edits": []}


def test_edits_in_code_actions_are_renumbered_for_each_client() -> None:
    store = _store()
    actions = [
        {"title": "fix", "edit": {"documentChanges": [_versioned(URI, 2), _versioned(OTHER, 5)]}},
        {"title": "run", "command": "x"},
        {"kind": "create", "uri": OTHER},
    ]
    raw = ev.encode_value(actions)
    for client, expected in ((1, 11), (2, 3), (3, None)):
        value = msgspec.json.decode(bytes(renumber_result(raw, client_versions(store, client))))
        changes = value[0]["edit"]["documentChanges"]
        assert changes[0]["textDocument"]["version"] == expected
        assert changes[1]["textDocument"]["version"] is None  # nobody has b.c open
        assert value[1:] == actions[1:]


def test_an_answer_computed_on_older_text_gets_the_clients_older_number() -> None:
    store = _store()
    raw = ev.encode_value({"documentChanges": [_versioned(URI, 1)]})
    value = msgspec.json.decode(bytes(renumber_result(raw, client_versions(store, 1))))
    assert value["documentChanges"][0]["textDocument"]["version"] == 10


def test_results_without_document_changes_pass_through_as_the_same_bytes() -> None:
    raw = ev.encode_value({"changes": {URI: []}})
    assert renumber_result(raw, client_versions(_store(), 1)) is raw


def test_only_edits_for_another_version_are_stale() -> None:
    store = _store()
    assert stale_documents({"documentChanges": [_versioned(URI, 2), _versioned(OTHER, 1)]}, store) == []
    (reason,) = stale_documents({"documentChanges": [_versioned(URI, 1)]}, store)
    assert "version 2" in reason and "version 1" in reason


class _Recorder(_Instance):
    """An instance that records what the daemon sends the server."""

    name = "fake@/p"

    def __init__(self, *client_ids: int) -> None:
        super().__init__(*client_ids)
        self.documents = _store()
        self.sent: list[Any] = []
        for client in self.clients.values():
            client.asked = []
            # An editor that takes versioned edits, as most do.
            client.capabilities = {"workspace": {"workspaceEdit": {"documentChanges": True}}}
            client.request = lambda m, p, hook, gone, c=client: c.asked.append((m, p))

    async def send_to_server(self, body: bytes) -> None:
        self.sent.append(msgspec.json.decode(body))


@pytest.mark.anyio
async def test_an_edit_whose_cause_left_is_refused_for_it() -> None:
    inst = _Recorder(2)
    inst.ask(1, "workspace/executeCommand")  # client 1 has left
    inst.ask(2, "textDocument/hover")
    await route(inst, 7, "workspace/applyEdit", {"edit": {"changes": {}}})  # type: ignore[arg-type]
    assert inst.sent[0]["id"] == 7 and inst.sent[0]["result"]["applied"] is False
    assert "disconnected" in inst.sent[0]["result"]["failureReason"]
    assert inst.clients[2].asked == []


@pytest.mark.anyio
async def test_an_edit_reaches_its_cause_in_that_clients_numbering() -> None:
    inst = _Recorder(1, 2)
    inst.ask(2, "workspace/executeCommand")
    inst.ask(1, "textDocument/hover")
    await route(inst, 7, "workspace/applyEdit", {"edit": {"documentChanges": [_versioned(URI, 2)]}})  # type: ignore[arg-type]
    assert inst.sent == [] and inst.clients[1].asked == []
    ((method, params),) = inst.clients[2].asked
    assert method == "workspace/applyEdit"
    assert params["edit"]["documentChanges"][0]["textDocument"]["version"] == 3


@pytest.mark.anyio
async def test_other_requests_of_a_departed_cause_get_an_error() -> None:
    inst = _Recorder()
    inst.ask(1, "workspace/executeCommand")
    await route(inst, 8, "window/showMessageRequest", {"type": 3, "message": "?"})  # type: ignore[arg-type]
    assert inst.sent[0]["id"] == 8 and "disconnected" in inst.sent[0]["error"]["message"]
