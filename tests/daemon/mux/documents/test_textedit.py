"""Incremental edits in UTF-16 positions, as the server will apply them."""

from __future__ import annotations

from typing import Any

from lensmux.daemon.mux.documents.textedit import apply_changes, position_at


def _rng(l1: int, c1: int, l2: int, c2: int) -> dict[str, Any]:
    return {"start": {"line": l1, "character": c1}, "end": {"line": l2, "character": c2}}


def test_insert_replace_delete() -> None:
    text = "hello\nworld\n"
    text, clamped = apply_changes(text, [{"range": _rng(0, 5, 0, 5), "text": ","}])
    assert text == "hello,\nworld\n" and not clamped
    text, _ = apply_changes(text, [{"range": _rng(1, 0, 1, 5), "text": "there"}])
    assert text == "hello,\nthere\n"
    text, _ = apply_changes(text, [{"range": _rng(0, 5, 1, 0), "text": " "}])
    assert text == "hello there\n"


def test_changes_apply_in_order() -> None:
    text, _ = apply_changes("abc", [{"range": _rng(0, 0, 0, 0), "text": "X"}, {"range": _rng(0, 1, 0, 2), "text": ""}])
    assert text == "Xbc"


def test_full_replacement() -> None:
    assert apply_changes("old", [{"text": "new"}]) == ("new", False)


def test_positions_count_utf16_units() -> None:
    text = "a𝄞b\n"  # 𝄞 is two UTF-16 units
    out, clamped = apply_changes(text, [{"range": _rng(0, 3, 0, 4), "text": "c"}])
    assert out == "a𝄞c\n" and not clamped
    assert position_at("a𝄞b", 3) == {"line": 0, "character": 4}


def test_crlf_and_cr_line_endings() -> None:
    out, _ = apply_changes(
        "one\r\ntwo\rthree", [{"range": _rng(1, 0, 1, 3), "text": "2"}, {"range": _rng(2, 0, 2, 5), "text": "3"}]
    )
    assert out == "one\r\n2\r3"


def test_out_of_range_is_clamped_and_reported() -> None:
    out, clamped = apply_changes("ab\ncd", [{"range": _rng(0, 10, 0, 12), "text": "!"}])
    assert out == "ab!\ncd" and clamped
    out, clamped = apply_changes("ab", [{"range": _rng(5, 0, 6, 0), "text": "!"}])
    assert out == "ab!" and clamped
