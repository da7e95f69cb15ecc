"""Who opened what at the server, and answers scoped to one client's opens (index_scope.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec
from daemon.mux.mux_stubs import StubInstance, stub

from lensmux.adapters.clangd.clangd import ClangdAdapter
from lensmux.adapters.spec import ServerConfig
from lensmux.daemon.mux.documents.documents import DocumentStore
from lensmux.daemon.mux.views import index_scope

REFS = "textDocument/references"


def _open(store: DocumentStore, client: int, uri: str) -> None:
    store.open(client, {"textDocument": {"uri": uri, "languageId": "c", "version": 1, "text": "int x;\n"}})


def test_the_store_remembers_who_opened_what_at_this_server_process() -> None:
    store = DocumentStore()
    _open(store, 1, "file:///p/a.c")
    _open(store, 1, "file:///p/b.c")
    store.close(1, "file:///p/b.c")
    _open(store, 2, "file:///p/a.c")
    store.open_internal("file:///p/c.c", "c", "int y;\n")
    # Closed files stay: the server keeps them in its index.
    assert store.opened_by(1) == {"/p/a.c", "/p/b.c"}
    assert store.opened_by(2) == {"/p/a.c"}
    assert store.opened_at_server() == {"/p/a.c", "/p/b.c", "/p/c.c"}
    # A new server process knows only what is open when it is replayed.
    store.replay()
    assert store.opened_at_server() == {"/p/a.c", "/p/c.c"}
    assert store.opened_by(1) == {"/p/a.c"}
    store.drop_client(2)
    assert store.opened_by(2) == set()


def _loc(path: Path, line: int) -> dict[str, Any]:
    rng = {"start": {"line": line, "character": 0}, "end": {"line": line, "character": 3}}
    return {"uri": path.as_uri(), "range": rng}


def test_each_client_gets_the_locations_of_its_own_opens(tmp_path: Path) -> None:
    main, util, intl = (tmp_path / name for name in ("main.c", "util.c", "intl.c"))
    agent, editor = stub(1), stub(2)
    inst: Any = StubInstance(agent, editor, adapter=ClangdAdapter(ServerConfig(name="clangd", command="clangd")))
    _open(inst.documents, agent.id, main.as_uri())
    _open(inst.documents, editor.id, util.as_uri())
    inst.documents.open_internal(intl.as_uri(), "c", "")  # the daemon's search opened it
    shared = [_loc(main, 3), _loc(intl, 2), _loc(util, 9)]
    raw = msgspec.Raw(json.dumps(shared).encode())
    # The client's URI may be spelled otherwise than clangd spells it (escapes, `..`).
    asked = (tmp_path / "x" / ".." / "main.c").as_uri()
    assert json.loads(bytes(index_scope.for_client(inst, agent, REFS, raw, asked))) == [_loc(main, 3)]
    assert json.loads(bytes(index_scope.for_client(inst, editor, REFS, raw, util.as_uri()))) == [_loc(util, 9)]
    # Another adapter's answers pass as they came.
    plain: Any = StubInstance(agent)
    assert index_scope.for_client(plain, agent, REFS, raw, asked) is raw
