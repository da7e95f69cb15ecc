"""Symbols and chunks from documentSymbol results (hierarchical and flat) and from plain text."""

from __future__ import annotations

from typing import Any

from lensmux.graph.index.builder.preparing.chunking import ChunkConfig, chunk_file, split_lines
from lensmux.graph.index.builder.preparing.document_symbols import parse_document_symbols


def _pos(line: int, char: int) -> dict[str, int]:
    return {"line": line, "character": char}


def _doc_symbol(
    name: str, kind: int, start: int, end: int, children: list[dict[str, Any]] | None = None, *, end_char: int = 10
) -> dict[str, Any]:
    return {
        "name": name,
        "kind": kind,
        "range": {"start": _pos(start, 0), "end": _pos(end, end_char)},
        "selectionRange": {"start": _pos(start, 4), "end": _pos(start, 4 + len(name))},
        "children": children or [],
    }


UPLOAD = """import time

RETRIES = 3


class Uploader:
    \"\"\"Uploads blobs.\"\"\"

    timeout = 5

    def send(self, blob):
        tries = 0
        return self._post(blob)

    def _post(self, blob):
        def helper():
            return blob
        return helper()


def backoff_send(data):
    for i in range(RETRIES):
        time.sleep(2 ** i)
"""

UPLOAD_SYMBOLS = [
    _doc_symbol("RETRIES", 13, 2, 2),
    _doc_symbol(
        "Uploader",
        5,
        5,
        17,
        [
            _doc_symbol("timeout", 13, 8, 8),
            _doc_symbol("send", 6, 10, 12, [_doc_symbol("tries", 13, 11, 11)]),
            _doc_symbol("_post", 6, 14, 17, [_doc_symbol("helper", 12, 15, 16)]),
        ],
    ),
    _doc_symbol("backoff_send", 12, 20, 22),
]


def test_nested_document_symbols_get_qualified_names_kinds_and_parents() -> None:
    symbols = parse_document_symbols(UPLOAD_SYMBOLS)
    by_name = {s.qualified_name: s for s in symbols}
    assert set(by_name) == {
        "RETRIES",
        "Uploader",
        "Uploader.timeout",
        "Uploader.send",
        "Uploader._post",
        "Uploader._post.helper",
        "backoff_send",
    }, "the local variable `tries` must be dropped, the nested function kept"
    send = by_name["Uploader.send"]
    assert (send.kind, send.name, send.container, send.depth) == ("method", "send", "Uploader", 1)
    assert symbols[send.parent or 0].qualified_name == "Uploader"
    assert by_name["backoff_send"].kind == "function"
    assert by_name["Uploader"].kind == "class"
    assert (send.range.start_line, send.range.end_line) == (10, 12)
    assert send.selection_range.start_char == 4


def test_chunks_one_per_function_and_method_with_header_and_class_outline() -> None:
    symbols = parse_document_symbols(UPLOAD_SYMBOLS)
    chunks = chunk_file("src/pkg/upload.py", "python", UPLOAD, symbols)
    by_name = {(c.kind, c.name): c for c in chunks}
    assert set(by_name) == {
        ("class", "Uploader"),
        ("method", "Uploader.send"),
        ("method", "Uploader._post"),
        ("function", "backoff_send"),
        ("module", "src/pkg/upload.py"),
    }, "the nested helper stays inside _post's chunk"
    fn = by_name[("function", "backoff_send")]
    assert fn.text.splitlines()[0] == "# python src/pkg/upload.py function backoff_send"
    assert "def backoff_send(data):" in fn.text and "time.sleep(2 ** i)" in fn.text
    assert (fn.start_line, fn.end_line) == (20, 22)
    assert "def helper():" in by_name[("method", "Uploader._post")].text

    outline = by_name[("class", "Uploader")].text
    assert "Uploads blobs." in outline and "timeout = 5" in outline
    assert "def send(self, blob):" in outline, "member signatures stay in the class outline"
    assert "return self._post(blob)" not in outline, "member bodies are chunked separately"

    module = by_name[("module", "src/pkg/upload.py")].text
    assert "import time" in module and "RETRIES = 3" in module
    assert "time.sleep" not in module


def test_one_line_members_stay_in_their_class_chunk() -> None:
    text = "class Point {\npublic:\n    int x() const { return x_; }\n    int norm() const;\n    int x_;\n};\n"
    raw = [
        _doc_symbol(
            "Point",
            5,
            0,
            5,
            [_doc_symbol("x", 6, 2, 2), _doc_symbol("norm", 6, 3, 3), _doc_symbol("x_", 8, 4, 4)],
            end_char=2,
        )
    ]
    symbols = parse_document_symbols(raw)
    assert [s.qualified_name for s in symbols] == ["Point", "Point.x", "Point.norm", "Point.x_"]
    chunks = chunk_file("point.hpp", "cpp", text, symbols)
    assert [(c.kind, c.name) for c in chunks] == [("class", "Point")]
    assert "int x() const { return x_; }" in chunks[0].text and "int norm() const;" in chunks[0].text


def test_flat_symbol_information_is_nested_by_range_and_container() -> None:
    flat = [
        {
            "name": "Uploader",
            "kind": 5,
            "location": {"uri": "file:///u.py", "range": {"start": _pos(5, 0), "end": _pos(17, 10)}},
        },
        {
            "name": "send",
            "kind": 6,
            "containerName": "Uploader",
            "location": {"uri": "file:///u.py", "range": {"start": _pos(10, 4), "end": _pos(12, 10)}},
        },
        {
            "name": "tries",
            "kind": 13,
            "containerName": "send",
            "location": {"uri": "file:///u.py", "range": {"start": _pos(11, 8), "end": _pos(11, 17)}},
        },
        {
            "name": "Outer::inner",
            "kind": 12,
            "containerName": "ns",
            "location": {"uri": "file:///u.py", "range": {"start": _pos(20, 0), "end": _pos(22, 1)}},
        },
    ]
    symbols = parse_document_symbols(flat)
    names = {s.qualified_name: s for s in symbols}
    assert set(names) == {"Uploader", "Uploader.send", "ns.Outer.inner"}
    assert names["Uploader.send"].container == "Uploader"
    assert names["ns.Outer.inner"].name == "inner"
    chunks = chunk_file("u.py", "python", UPLOAD, symbols)
    assert {c.name for c in chunks if c.kind == "method"} == {"Uploader.send"}


def test_big_symbol_is_split_into_overlapping_windows_that_keep_the_name() -> None:
    body = [f"    total += step_{i}(value)" for i in range(150)]
    text = "\n".join(["def long_pipeline(value):", "    total = 0", *body, "    return total"]) + "\n"
    last = len(split_lines(text)) - 2
    symbols = parse_document_symbols([_doc_symbol("long_pipeline", 12, 0, last)])
    config = ChunkConfig(window_lines=60, window_overlap=10)
    chunks = [c for c in chunk_file("big.py", "python", text, symbols, config) if c.kind == "function"]
    assert len(chunks) == 3
    assert [(c.start_line, c.end_line) for c in chunks] == [(0, 59), (50, 109), (100, last)]
    for number, chunk in enumerate(chunks, 1):
        head, words, first = chunk.text.split("\n")[:3]
        assert head == f"# python big.py function long_pipeline (part {number}/3)"
        assert words == "long pipeline big", "the model reads the name and path as words"
        assert first == "def long_pipeline(value):", "every window starts with the signature"
    covered = set().union(*(range(c.start_line, c.end_line + 1) for c in chunks))
    assert covered == set(range(last + 1))


def test_file_without_a_server_becomes_line_windows_covering_every_line() -> None:
    text = "\n".join(f"line {i} of the notes" for i in range(130)) + "\n"
    chunks = chunk_file("docs/notes.md", "markdown", text, None, ChunkConfig(window_lines=50, window_overlap=5))
    assert all(c.kind == "file" and c.name == "docs/notes.md" and c.symbol is None for c in chunks)
    assert chunks[0].text.startswith("# markdown docs/notes.md file docs/notes.md (part 1/3)\nline 0 of the notes")
    covered = set().union(*(range(c.start_line, c.end_line + 1) for c in chunks))
    assert covered == set(range(130))


def test_empty_symbol_list_still_indexes_top_level_code() -> None:
    chunks = chunk_file("script.py", "python", "print('hello')\nrun_everything()\n", [])
    assert [(c.kind, c.start_line, c.end_line) for c in chunks] == [("module", 0, 1)]


def test_lines_split_like_lsp_not_like_splitlines() -> None:
    assert split_lines("a\r\nb\rc\nd\x0ce") == ["a", "b", "c", "d\x0ce"]
    text = "x = 1\r\ndef f():\r\n    return 2\r\n"
    chunks = chunk_file("crlf.py", "python", text, parse_document_symbols([_doc_symbol("f", 12, 1, 2)]))
    fn = next(c for c in chunks if c.kind == "function")
    assert fn.text.split("\n")[2:] == ["def f():", "    return 2"]


def test_a_symbol_chunk_names_its_symbol_class_and_file_in_plain_words() -> None:
    text = "class BrotliEncoder:\n    def encodeHQ_block(self):\n        return 1\n"
    raw = [_doc_symbol("BrotliEncoder", 5, 0, 2, children=[_doc_symbol("encodeHQ_block", 6, 1, 2)])]
    chunks = chunk_file("c/enc/encoder_state.py", "python", text, parse_document_symbols(raw))
    method = next(c for c in chunks if c.kind == "method")
    assert method.text.split("\n")[1] == "brotli encoder encode hq block c enc state"


def test_malformed_symbols_are_ignored() -> None:
    raw: list[Any] = [{"name": "ok", "kind": 12, "range": {"start": _pos(0, 0), "end": _pos(1, 0)}}, {"kind": 12}, 7]
    assert [s.name for s in parse_document_symbols(raw)] == ["ok"]
    assert parse_document_symbols(None) == []
