"""The shared document store: reference counts and the server's version numbering."""

from __future__ import annotations

from lensmux.daemon.mux.documents.documents import DocumentStore

URI = "file:///p/a.c"


def _open(store: DocumentStore, client: int, text: str, version: int = 1) -> list[str]:
    item = {"uri": URI, "languageId": "c", "version": version, "text": text}
    return [n.method for n in store.open(client, {"textDocument": item})]


def test_only_first_open_and_last_close_reach_the_server() -> None:
    store = DocumentStore()
    assert _open(store, 1, "x") == ["textDocument/didOpen"]
    assert _open(store, 2, "x") == []
    assert store.close(1, URI) == []
    assert [n.method for n in store.close(2, URI)] == ["textDocument/didClose"]
    assert store.get(URI) is None


def test_versions_strictly_increase_whichever_client_edits() -> None:
    store = DocumentStore()
    _open(store, 1, "abc", version=10)
    _open(store, 2, "abc", version=1)
    seen = []
    for client, cversion in [(1, 11), (2, 2), (1, 12), (2, 3)]:
        change = {"range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}}, "text": "z"}
        notices = store.change(client, {"textDocument": {"uri": URI, "version": cversion}, "contentChanges": [change]})
        seen.append(notices[0].params["textDocument"]["version"])
    assert seen == sorted(set(seen)) and len(seen) == 4
    doc = store.get(URI)
    assert doc is not None and doc.text == "zzzzabc"
    # Each client's own numbering is what it gets back for the current version.
    assert store.client_version(URI, 1, doc.version) == 12
    assert store.client_version(URI, 2, doc.version) == 3
    assert store.client_version(URI, 2, doc.version - 1) is None


def test_newcomer_with_different_text_resyncs_the_server() -> None:
    store = DocumentStore()
    _open(store, 1, "old")
    notices = store.open(2, {"textDocument": {"uri": URI, "languageId": "c", "version": 1, "text": "new"}})
    assert notices[0].method == "textDocument/didChange"
    assert notices[0].params["contentChanges"] == [{"text": "new"}]


def test_departing_client_releases_its_documents_and_replay_reopens_all() -> None:
    store = DocumentStore()
    _open(store, 1, "x")
    assert [n.method for n in store.drop_client(1)] == ["textDocument/didClose"]
    _open(store, 2, "y")
    assert [n.params["textDocument"]["text"] for n in store.replay()] == ["y"]


def test_out_of_range_edit_becomes_a_full_resync() -> None:
    store = DocumentStore()
    _open(store, 1, "ab")
    bad = {"range": {"start": {"line": 9, "character": 0}, "end": {"line": 9, "character": 0}}, "text": "!"}
    notices = store.change(1, {"textDocument": {"uri": URI, "version": 2}, "contentChanges": [bad]})
    assert notices[0].params["contentChanges"] == [{"text": "ab!"}]


def test_newcomer_with_the_disk_text_keeps_the_unsaved_edits_open() -> None:
    store = DocumentStore()
    _open(store, 1, "edited but not saved")
    item = {"uri": URI, "languageId": "c", "version": 1, "text": "disk text"}
    assert store.open(2, {"textDocument": item}, disk_text="disk text") == []
    doc = store.get(URI)
    assert doc is not None and doc.text == "edited but not saved" and set(doc.holders) == {1, 2}


def test_a_document_only_the_daemon_holds_follows_the_file() -> None:
    store = DocumentStore()
    store.open_internal(URI, "c", "old", disk_epoch=3)
    notices = store.refresh_internal(URI, "new")
    assert [n.method for n in notices] == ["textDocument/didChange"]
    assert notices[0].params == {"textDocument": {"uri": URI, "version": 2}, "contentChanges": [{"text": "new"}]}
    doc = store.get(URI)
    assert doc is not None and doc.text == "new" and doc.pristine_epoch is None
    assert store.refresh_internal(URI, "new", disk_epoch=4) == []
    assert doc.pristine_epoch == 4, "the same text read from disk is the file as saved again"


def test_refreshing_never_changes_a_text_an_editor_holds() -> None:
    store = DocumentStore()
    _open(store, 1, "typed by the user")
    store.open_internal(URI, "c", "disk text")
    assert store.refresh_internal(URI, "disk text") == []
    doc = store.get(URI)
    assert doc is not None and doc.text == "typed by the user"
