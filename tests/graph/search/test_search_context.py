"""Context assembly: the budget holds under the caller's token counter, anchors go last, formats parse."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from search_fakes import FakeEmbedder, FakeGateway
from search_projects import UPLOADER, indexed

from lensmux.graph.search import (
    HybridSearchEngine,
    Position,
    Range,
    SearchRequest,
    SymbolResult,
    assemble_context,
)
from lensmux.graph.search.answer.context import FORMATS, ContextFormat

pytestmark = pytest.mark.anyio

count_words = FakeEmbedder().count_tokens


def _symbol(name: str, kind: str, score: float, code: str, *, anchor: bool = False, line: int = 0) -> SymbolResult:
    reasons = ["anchor:explicit_symbol"] if anchor else [f"seed:keyword:{line + 1}"]
    path = f"src/{name}.py"
    return SymbolResult(
        id=f"{path}:Owner.{name}:{line}",
        name=name,
        kind=kind,
        file_path=path,
        range=Range(Position(line, 0), Position(line + code.count("\n"), 9)),
        score=score,
        raw_code=code,
        reasons=reasons,
    )


def _ranked() -> list[SymbolResult]:
    body = "\n".join(f"    total = total + step_{i}(value)  # keep going" for i in range(12))
    return [
        _symbol("alpha", "function", 0.9, "def alpha():\n" + body, line=1),
        _symbol("Beta", "class", 0.8, "class Beta:\n    x: int\n    def go(self) -> None: ...", line=20),
        _symbol("gamma", "function", 0.7, "def gamma():\n" + body, line=40),
        _symbol("anchored", "method", 0.2, "def anchored(self):\n    return self.x < 3 and '&' != '<'", anchor=True),
    ]


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("budget", [0, 10, 40, 80, 120, 200, 400, 5000])
def test_budget_is_never_exceeded_as_the_caller_counts(fmt: ContextFormat, budget: int) -> None:
    symbols = _ranked()
    out = assemble_context(symbols, budget_tokens=budget, count_tokens=count_words, fmt=fmt)
    assert out.token_count == count_words(out.context) <= budget
    assert out.truncated == bool(out.dropped)
    assert [s.id for s in out.sources] == [s.id for s in symbols if s.id not in out.dropped]
    for dropped in out.dropped:
        assert dropped.split(":")[1] not in out.context


def test_a_different_counter_gives_a_different_cut() -> None:
    symbols = _ranked()
    chars = assemble_context(symbols, budget_tokens=600, count_tokens=len)
    words = assemble_context(symbols, budget_tokens=600, count_tokens=count_words)
    assert len(chars.context) <= 600 < len(words.context)
    assert len(chars.sources) < len(words.sources)


def test_lowest_scores_go_first_and_anchors_last() -> None:
    symbols = _ranked()
    full = assemble_context(symbols, budget_tokens=10_000, count_tokens=count_words)
    assert not full.truncated and len(full.sources) == 4
    anchor_only = count_words(assemble_context(symbols[3:], budget_tokens=10_000, count_tokens=count_words).context)
    tight = assemble_context(symbols, budget_tokens=anchor_only, count_tokens=count_words)
    assert [s.name for s in tight.sources] == ["Owner.anchored"], "the anchor outlives higher scores"
    assert tight.dropped == [s.id for s in symbols[:3]]
    middle = assemble_context(symbols, budget_tokens=full.token_count - 1, count_tokens=count_words)
    assert "src/gamma.py:Owner.gamma:40" in middle.dropped, "the lowest-scoring non-anchor goes first"
    assert "src/alpha.py:Owner.alpha:1" not in middle.dropped


def test_markdown_groups_by_kind_and_lists_sources() -> None:
    out = assemble_context(_ranked(), budget_tokens=10_000, count_tokens=count_words, fmt="markdown")
    headings = re.findall(r"^## (.+)$", out.context, flags=re.MULTILINE)
    assert headings == ["Functions", "Classes", "Methods", "Sources"], "groups in order of their best member"
    functions = out.context.split("## Functions")[1].split("## Classes")[0]
    assert "`Owner.alpha`" in functions and "`Owner.gamma`" in functions
    assert "src/alpha.py:2-14" in out.context, "1-based lines for people"
    assert "```python\ndef alpha():" in out.context
    assert out.context.rstrip().endswith("- `Owner.anchored` (method) src/anchored.py:1")


def test_markdown_fence_survives_code_that_contains_one() -> None:
    tricky = _symbol("doc", "function", 1.0, 'def doc():\n    """Example:\n    ```\n    x\n    ```"""')
    out = assemble_context([tricky], budget_tokens=1000, count_tokens=count_words)
    assert "````python\n" in out.context and out.context.count("````") == 2


def test_xml_is_well_formed_and_escapes_code() -> None:
    out = assemble_context(_ranked(), budget_tokens=10_000, count_tokens=count_words, fmt="xml")
    root = ET.fromstring(out.context)
    assert root.tag == "context"
    groups = root.findall("group")
    assert [g.get("kind") for g in groups] == ["function", "class", "method"]
    anchored = groups[2].find("symbol")
    assert anchored is not None and anchored.text is not None
    assert "self.x < 3 and '&' != '<'" in anchored.text
    assert [s.get("name") for s in root.iter("source")] == [
        "Owner.alpha",
        "Owner.Beta",
        "Owner.gamma",
        "Owner.anchored",
    ]


def test_plain_has_section_markers() -> None:
    out = assemble_context(_ranked(), budget_tokens=10_000, count_tokens=count_words, fmt="plain")
    assert "=== Functions ===" in out.context and "=== Sources ===" in out.context


def test_long_code_is_cut_with_a_note() -> None:
    long = _symbol("long", "function", 1.0, "\n".join(f"line_{i} = {i}" for i in range(200)))
    out = assemble_context([long], budget_tokens=100_000, count_tokens=count_words, max_code_lines=50)
    assert "line_49 = 49" in out.context and "line_50 = 50" not in out.context
    assert "... (150 more lines)" in out.context


async def test_search_results_assemble_into_context(tmp_path: Path) -> None:
    async with indexed(tmp_path, UPLOADER) as ix:
        engine = HybridSearchEngine(FakeGateway(ix.root), embed_query=FakeEmbedder().embed_query)
        response = await engine.search(SearchRequest(query="how is `read_file` used by uploads"), ix)
    out = assemble_context(response.ranked_symbols, budget_tokens=150, count_tokens=count_words)
    assert out.token_count <= 150 and out.truncated
    assert out.sources[0].id == "pkg/uploader.py:read_file:29" and out.sources[0].anchor
    assert "def read_file(path: str) -> bytes:" in out.context
