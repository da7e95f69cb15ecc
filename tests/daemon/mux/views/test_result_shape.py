"""Snippets and documentChanges reach only clients that declared them."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
from daemon.mux.mux_stubs import StubInstance, stub

from lensmux.daemon.mux import server_requests
from lensmux.daemon.mux.clients.client_caps import hover_format
from lensmux.daemon.mux.views.result_shape import flat_symbols, shape_result, snippet_text
from lensmux.daemon.wire import envelope as ev

pytestmark = pytest.mark.anyio

DOC_CHANGES = {"workspace": {"workspaceEdit": {"documentChanges": True, "resourceOperations": ["create"]}}}
RANGE = {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 2}}


@pytest.mark.parametrize(
    ("snippet", "text"),
    [
        ("add(${1:int a}, ${2:int b})", "add(int a, int b)"),
        ("print($1)$0", "print()"),
        ("${1|yes,no|} \\$HOME", "yes $HOME"),
        ("${TM_FILENAME:name} ${2:outer ${3:inner}}", "name outer inner"),
        ("plain", "plain"),
    ],
)
def test_snippets_become_the_text_they_insert_by_default(snippet: str, text: str) -> None:
    assert snippet_text(snippet) == text


def test_completions_are_plain_for_clients_without_snippets() -> None:
    item = {
        "label": "add",
        "labelDetails": {"detail": "(int a)"},
        "insertTextFormat": 2,
        "textEdit": {"range": RANGE, "newText": "add(${1:int a})"},
    }
    raw = ev.encode_value({"isIncomplete": False, "items": [item]})
    plain = ev.decode_value(shape_result("textDocument/completion", raw, {}))["items"][0]
    # What clangd itself answers a client without snippets or label details.
    assert plain["textEdit"]["newText"] == "add"
    assert plain["insertTextFormat"] == 1
    assert plain["label"] == "add(int a)" and "labelDetails" not in plain
    rich = {"textDocument": {"completion": {"completionItem": {"snippetSupport": True, "labelDetailsSupport": True}}}}
    assert shape_result("textDocument/completion", raw, rich) is raw


def test_workspace_edits_become_changes_for_clients_without_document_changes() -> None:
    edit = {
        "documentChanges": [
            {"textDocument": {"uri": "file:///p/a.py", "version": 3}, "edits": [{"range": RANGE, "newText": "x"}]}
        ]
    }
    raw = ev.encode_value(edit)
    shaped = ev.decode_value(shape_result("textDocument/rename", raw, {}))
    assert shaped == {"changes": {"file:///p/a.py": [{"range": RANGE, "newText": "x"}]}}
    assert shape_result("textDocument/rename", raw, DOC_CHANGES) is raw


async def test_apply_edit_with_file_operations_a_client_cannot_do_is_refused_for_it() -> None:
    client = stub(1, DOC_CHANGES)
    inst: Any = StubInstance(client)
    edit = {"documentChanges": [{"kind": "delete", "uri": "file:///p/old.py"}]}
    await server_requests.handle(inst, ev.decode(ev.request(5, "workspace/applyEdit", ev.encode_value({"edit": edit}))))
    assert client.messages == []
    assert inst.to_server[0]["id"] == 5 and inst.to_server[0]["result"]["applied"] is False


def test_hierarchical_symbols_become_flat_for_a_client_without_hierarchy() -> None:
    tree = [
        {
            "name": "Calc",
            "kind": 5,
            "range": _rng(0, 0, 9, 0),
            "selectionRange": _rng(0, 6, 0, 10),
            "children": [{"name": "add", "kind": 6, "range": _rng(1, 4, 2, 0), "selectionRange": _rng(1, 8, 1, 11)}],
        },
        {"name": "main", "kind": 12, "range": _rng(10, 0, 12, 0), "selectionRange": _rng(10, 4, 10, 8)},
    ]
    raw = ev.encode_value(tree)
    flat = msgspec.json.decode(flat_symbols(raw, "file:///p/a.py", {}))
    assert [(s["name"], s.get("containerName")) for s in flat] == [("Calc", None), ("add", "Calc"), ("main", None)]
    assert flat[1]["location"] == {"uri": "file:///p/a.py", "range": _rng(1, 4, 2, 0)}
    hierarchical = {"textDocument": {"documentSymbol": {"hierarchicalDocumentSymbolSupport": True}}}
    assert flat_symbols(raw, "file:///p/a.py", hierarchical) is raw
    # clangd's own flattening names every container "" (nested symbols too).
    as_clangd = msgspec.json.decode(flat_symbols(raw, "file:///p/a.py", {}, blank_containers=True))
    assert [(s["name"], s["containerName"]) for s in as_clangd] == [("Calc", ""), ("add", ""), ("main", "")]


def _rng(sl: int, sc: int, el: int, ec: int) -> dict[str, dict[str, int]]:
    return {"start": {"line": sl, "character": sc}, "end": {"line": el, "character": ec}}


@pytest.mark.parametrize(
    ("content_format", "kind"),
    [
        (None, "plaintext"),
        ([], "plaintext"),
        (["markdown", "plaintext"], "markdown"),
        (["plaintext", "markdown"], "plaintext"),
        (["foo", "markdown"], "markdown"),
        ("markdown", "plaintext"),
        (["Markdown"], "plaintext"),
    ],
)
def test_the_hover_format_is_the_first_known_kind_the_client_lists(content_format: Any, kind: str) -> None:
    # As clangd 22 and pyright 1.1.414 alone choose (seen with both, each case).
    hover = {} if content_format is None else {"contentFormat": content_format}
    assert hover_format({"textDocument": {"hover": hover}}) == kind


def test_hovers_reach_plaintext_clients_in_the_servers_plaintext() -> None:
    result = ev.encode_value({"contents": {"kind": "markdown", "value": "### `x`"}, "range": RANGE})
    markdown_client = {"textDocument": {"hover": {"contentFormat": ["markdown", "plaintext"]}}}
    plain = shape_result("textDocument/hover", result, {}, plaintext_hover=lambda md: md.replace("### ", ""))
    assert ev.decode_value(plain) == {"contents": {"kind": "plaintext", "value": "`x`"}, "range": RANGE}
    # A markdown client's answer is passed on as it came; so is one the adapter cannot render.
    assert shape_result("textDocument/hover", result, markdown_client, plaintext_hover=lambda md: "") is result
    assert shape_result("textDocument/hover", result, {}, plaintext_hover=lambda md: None) is result
    assert shape_result("textDocument/hover", result, {}) is result
    assert shape_result("textDocument/hover", ev.NULL, {}, plaintext_hover=lambda md: "") is ev.NULL
