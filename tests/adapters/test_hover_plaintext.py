"""A markdown hover rendered as the server alone renders it for a plaintext client, on real pairs.

The pairs are the answers of the real clangd and pyright to the same hovers, once told the
daemon's capabilities (markdown) and once told none (plaintext); hover/collect_pairs.py
regenerates them from the corpus written for these tests (set LENSMUX_HOVER_PAIRS to the directory
of a `collect_pairs.py --libraries` run to check real libraries' documentation too, which is never
committed). clangd's plaintext is rebuilt exactly; pyright's docstring conversion to
markdown loses information, and LOSSY lists each construct that can make its plaintext
differ: every docstring without them is rebuilt exactly.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lensmux.adapters.base import Adapter
from lensmux.adapters.clangd.clangd import ClangdAdapter
from lensmux.adapters.pyright.pyright import PyrightAdapter
from lensmux.adapters.spec import ServerConfig

PAIRS = Path(os.environ.get("LENSMUX_HOVER_PAIRS") or Path(__file__).parent / "hover")


def _pairs(name: str) -> tuple[dict[str, Any], list[dict[str, str]]]:
    header, *pairs = (json.loads(line) for line in (PAIRS / name).read_text(encoding="utf-8").splitlines())
    return header, pairs


def _clangd(markdown: str) -> str | None:
    return ClangdAdapter(ServerConfig(name="clangd", command="clangd")).plaintext_hover(markdown)


def _pyright(markdown: str) -> str | None:
    return PyrightAdapter(ServerConfig(name="pyright", command="pyright-langserver")).plaintext_hover(markdown)


@pytest.mark.parametrize("name", ["clangd_pairs.jsonl", "clangd_markdown_comments_pairs.jsonl"])
def test_clangd_plaintext_is_rebuilt_exactly(name: str) -> None:
    header, pairs = _pairs(name)
    assert header["server"] == "clangd" and len(pairs) > 200
    wrong = [p["where"] for p in pairs if _clangd(p["markdown"]) != p["plaintext"]]
    assert wrong == []


def test_clangd_doxygen_layout_is_left_in_markdown_never_misread() -> None:
    # `CommentFormat: Doxygen` lays a markdown hover out otherwise than the plaintext one.
    header, pairs = _pairs("clangd_doxygen_comments_pairs.jsonl")
    assert header["comment_format"] == "Doxygen"
    results = [(_clangd(p["markdown"]), p["plaintext"]) for p in pairs]
    assert all(got is None or got == want for got, want in results)
    assert sum(got is None for got, _ in results) > len(results) / 2


def test_clangd_comment_escapes_and_line_breaks() -> None:
    # One of the pairs above, spelled out: what clangd 22 answers for util.h's `scale`.
    markdown = (
        "### function `scale`\n\n---\n→ `int`\n\nParameters:\n\n- `int value`\n- `int factor`\n\n"
        "Scales a \\*value\\* by `factor`, see \\*\\*docs\\*\\*.\n\n"
        "Uses a_b_c and \\_\\_init\\_\\_ names; 2 * 3 = 6.  \n\\# Not a heading  \n\\- item one  \n\\- item two\n\n"
        "    indented code\n\n\\\\param value the value  \n\\\\param factor the factor  \n\\\\return the product\n\n"
        "---\n```cpp\nint scale(int value, int factor)\n```"
    )
    assert _clangd(markdown) == (
        "function scale\n\n→ int\n\nParameters:\n\n- int value\n- int factor\n\n"
        "Scales a *value* by `factor`, see **docs**.\n\n"
        "Uses a_b_c and __init__ names; 2 * 3 = 6.\n# Not a heading\n- item one\n- item two\n\nindented code\n\n"
        "\\param value the value\n\\param factor the factor\n\\return the product\n\nint scale(int value, int factor)"
    )


def test_clangd_markdown_of_another_layout_is_not_read() -> None:
    assert _clangd("### function\n\n---\n```cpp\nint f()\n```") is None
    assert _clangd("plain words") is None


# What pyright's markdown conversion of a docstring loses (analyzer/docStringConversion.ts), as
# found in the docstring (= the plaintext): where none is present, the plaintext is exact.
def _continued_or_nested_list(doc: str) -> bool:
    lines = doc.split("\n")
    for k, line in enumerate(lines):
        item = re.match(r"^( *)[-*] ", line)
        if item is None:
            continue
        if item.group(1):
            return True
        following = lines[k + 1] if k + 1 < len(lines) else ""
        if following.strip() and not re.match(r"^\s*([-*]|\d+\.)\s", following):
            return True
    return False


LOSSY: dict[str, Callable[[str], object]] = {
    "a reST role (:class:`x`), written as `x`": lambda d: re.search(r":[\w\-+.]+:`|`:[\w\-+.]+:", d),
    "double backticks, written as single ones": lambda d: "``" in d,
    "a reST directive (.. name::), dropped with its block": lambda d: re.search(r"(?m)^\s*\.\. ", d),
    "'::' after a space, alone, or before an unindented line": lambda d: re.search(r"(?m)((\s::|^::)$|::\n\n\S)", d),
    "an indented doctest, written dedented": lambda d: re.search(r"(?m)^ +>>> ", d),
    "markdown escapes or HTML entities written in the docstring": lambda d: re.search(
        r"\\[_*~\[\]]|&lt;|&gt;|&nbsp;", d
    ),
    "a table or a ~, + or spaced underline, rewritten": lambda d: re.search(
        r"(?m)^\s*(=+(\s+=+)+|-+(\s+-+)+|~~~+|\+\+\++)$", d
    ),
    "a nested or continued bullet list, reindented": _continued_or_nested_list,
    "an @ line right after text, given a blank line before": lambda d: re.search(r"(?m)^.*\S.*\n@", d),
    "an indented fence or one of four backticks": lambda d: re.search(r"(?m)^( +(```|~~~)|````)", d),
}


def test_pyright_plaintext_is_exact_unless_the_docstring_has_a_lossy_construct() -> None:
    header, pairs = _pairs("pyright_pairs.jsonl")
    assert header["server"] == "pyright" and len(pairs) > 100
    unexplained = [
        p["where"]
        for p in pairs
        if _pyright(p["markdown"]) != p["plaintext"] and not any(found(p["plaintext"]) for found in LOSSY.values())
    ]
    assert unexplained == []
    # Most real docstrings have none of them.
    exact = sum(_pyright(p["markdown"]) == p["plaintext"] for p in pairs)
    assert exact > 0.8 * len(pairs)


def test_pyright_parts() -> None:
    signature = "(function) def scale(\n    value: int,\n    factor: int\n) -> int"
    assert _pyright(f"```python\n{signature}\n```") == signature
    assert _pyright(f"```python\n{signature}\n```\n---\nScales a\\_b by &lt;n&gt;.\n\n&nbsp;&nbsp;code") == (
        f"{signature}\n\nScales a_b by <n>.\n\n  code"
    )
    # A parameter's line of its function's docstring is raw text in both formats.
    assert _pyright("```python\n(parameter) x: int\n```\nx: the x") == "(parameter) x: int\n\nx: the x"
    assert _pyright("Returns the sum.") == "Returns the sum."


def test_generic_servers_keep_their_markdown() -> None:
    assert Adapter(ServerConfig(name="other", command="other")).plaintext_hover("**bold**") is None


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("#`*_\\-→ \n\t<>&[]().:@abc~=+|!?0123456789")), max_size=200))
def test_any_markdown_gives_text_or_none_never_an_error(markdown: str) -> None:
    # An answer the adapters cannot read must pass on as it came, never fail the client's request.
    for render in (_clangd, _pyright):
        result = render(markdown)
        assert result is None or isinstance(result, str)
        result = render("### function `f`\n\n---\n" + markdown)
        assert result is None or isinstance(result, str)
        result = render("```python\n(function) def f() -> None\n```\n---\n" + markdown)
        assert result is None or isinstance(result, str)
