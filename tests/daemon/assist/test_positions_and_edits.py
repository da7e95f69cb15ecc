"""1-based character positions versus LSP UTF-16 positions, and edits applied for a preview."""

from __future__ import annotations

from lensmux.daemon.assist.lsp.positions import display_path, from_lsp, split_lines, to_lsp
from lensmux.daemon.assist.tools.edits import apply_text_edits

LINE = 'clef = "𝄞é𝄞"; total = add(1, 2)'


def test_columns_in_characters_become_utf16_units_and_back() -> None:
    lines = ["first", LINE]
    column = LINE.index("add") + 1
    position = to_lsp(lines, 2, column)
    # Two astral characters before `add` count twice in UTF-16.
    assert position == {"line": 1, "character": column - 1 + 2}
    assert from_lsp(lines, position) == (2, column)


def test_positions_past_the_end_are_clamped_not_invented() -> None:
    lines = split_lines("ab\r\ncd\n")
    assert lines == ["ab", "cd", ""]
    assert to_lsp(lines, 99, 99) == {"line": 2, "character": 0}
    assert from_lsp(lines, {"line": 0, "character": 40}) == (1, 3)


def test_text_edits_apply_against_the_original_text_in_any_order() -> None:
    lines = ["def add(a, b):", "    x = '𝄞'; return add(a, b)"]
    edits = [
        {"range": {"start": {"line": 1, "character": 21}, "end": {"line": 1, "character": 24}}, "newText": "plus"},
        {"range": {"start": {"line": 0, "character": 4}, "end": {"line": 0, "character": 7}}, "newText": "plus"},
    ]
    assert apply_text_edits(lines, edits) == "def plus(a, b):\n    x = '𝄞'; return plus(a, b)"


def test_paths_are_shown_relative_to_the_root_or_absolute_outside_it(tmp_path: object) -> None:
    from pathlib import Path

    root = Path("/work/project")
    assert display_path(root / "src" / "a.c", root) == "src/a.c"
    assert display_path(Path("/usr/include/stdio.h"), root) == "/usr/include/stdio.h"
