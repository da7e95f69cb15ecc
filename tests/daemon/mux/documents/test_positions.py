"""Position encodings: what servers are offered, what clients are told, and edits between them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from lensmux.adapters.base import Adapter
from lensmux.adapters.spec import ServerConfig
from lensmux.daemon.mux.documents.documents import DocumentStore
from lensmux.daemon.mux.documents.positions import negotiated_encoding
from lensmux.daemon.mux.documents.textedit import apply_changes, position_at
from lensmux.daemon.mux.views.client_view import _shape

URI = "file:///p/a.c"
LINE = "/* é😀 */ int first;"
CODECS = {"utf-8": "utf-8", "utf-16": "utf-16-le", "utf-32": "utf-32-le"}
WIDTH = {"utf-8": 1, "utf-16": 2, "utf-32": 4}


def _units(text: str, encoding: str) -> int:
    return len(text.encode(CODECS[encoding])) // WIDTH[encoding]


def _offset(text: str, pos: dict[str, int], encoding: str) -> int:
    lines = text.split("\n")
    line = lines[pos["line"]]
    column = next(i for i in range(len(line) + 1) if _units(line[:i], encoding) >= pos["character"])
    return sum(len(x) + 1 for x in lines[: pos["line"]]) + column


def _apply_independently(text: str, changes: list[dict[str, Any]], encoding: str) -> str:
    """What a server speaking `encoding` makes of the changes (no lensmux code)."""
    for change in changes:
        if "range" not in change:
            text = change["text"]
            continue
        start = _offset(text, change["range"]["start"], encoding)
        end = _offset(text, change["range"]["end"], encoding)
        text = text[:start] + change["text"] + text[end:]
    return text


def _rng(line: int, start: int, end: int) -> dict[str, Any]:
    return {"start": {"line": line, "character": start}, "end": {"line": line, "character": end}}


@pytest.mark.parametrize("encoding", ["utf-8", "utf-16", "utf-32"])
def test_positions_count_the_units_of_each_encoding(encoding: str) -> None:
    column = LINE.index("first")
    at = _units(LINE[:column], encoding)
    out, clamped = apply_changes(LINE, [{"range": _rng(0, at, at + 5), "text": "other"}], encoding)
    assert out == LINE.replace("first", "other") and not clamped
    assert position_at(LINE, column, encoding) == {"line": 0, "character": at}


@pytest.mark.parametrize("server", ["utf-8", "utf-32"])
def test_client_edits_reach_a_server_in_its_own_encoding(server: str) -> None:
    store = DocumentStore()
    store.server_encoding = server
    second = "int x; /* ü */ int y;"
    text = f"{LINE}\n{second}\n"
    server_copy = text
    store.open(1, {"textDocument": {"uri": URI, "languageId": "c", "version": 1, "text": text}})
    edits = [
        {
            "range": _rng(0, _units(LINE[: LINE.index("first")], "utf-16"), _units(LINE[: LINE.index(";")], "utf-16")),
            "text": "renamed",
        },
        {"range": _rng(1, second.rindex(";"), second.rindex(";")), "text": "_2"},  # ü is one UTF-16 unit
    ]
    notices = store.change(1, {"textDocument": {"uri": URI, "version": 2}, "contentChanges": edits})
    doc = store.get(URI)
    assert doc is not None and doc.text == "/* é😀 */ int renamed;\nint x; /* ü */ int y_2;\n"
    server_copy = _apply_independently(server_copy, notices[0].params["contentChanges"], server)
    assert server_copy == doc.text
    # A restarted server is given the same text.
    assert store.replay()[0].params["textDocument"]["text"] == server_copy


def test_the_server_is_offered_utf16_only_whatever_the_first_client_offered() -> None:
    caps = {"general": {"positionEncodings": ["utf-8", "utf-16"]}, "offsetEncoding": ["utf-8", "utf-16"]}
    adapter = Adapter(ServerConfig(name="clangd", command="clangd"))
    params = adapter.initialize_params({"capabilities": caps}, Path("/p"), 1)
    assert params["capabilities"]["general"]["positionEncodings"] == ["utf-16"]
    assert params["capabilities"]["offsetEncoding"] == ["utf-16"]


def test_the_servers_choice_is_read_from_either_field() -> None:
    assert negotiated_encoding({"capabilities": {"positionEncoding": "utf-8"}}) == "utf-8"
    assert negotiated_encoding({"capabilities": {}, "offsetEncoding": "utf-32"}) == "utf-32"
    assert negotiated_encoding({"capabilities": {}}) == "utf-16"


def test_each_client_is_told_one_encoding_in_every_field_it_reads() -> None:
    server = {"capabilities": {"positionEncoding": "utf-8", "hoverProvider": True}, "offsetEncoding": "utf-8"}
    neovim = _shape(
        server, {"offsetEncoding": ["utf-8", "utf-16"], "general": {"positionEncodings": ["utf-8"]}}, pull=False
    )
    assert neovim["capabilities"]["positionEncoding"] == "utf-16" and neovim["offsetEncoding"] == "utf-16"
    plain = _shape(server, {}, pull=False)
    assert plain["capabilities"]["positionEncoding"] == "utf-16" and "offsetEncoding" not in plain
    assert plain["capabilities"]["hoverProvider"] is True
    assert server["offsetEncoding"] == "utf-8"  # the shared result is not changed
