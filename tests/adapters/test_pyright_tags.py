"""pyright's tagged hints for a client that did not declare their tag (pyright_tags.py)."""

from __future__ import annotations

from typing import Any

from lensmux.adapters.pyright.pyright import PyrightAdapter
from lensmux.adapters.pyright.pyright_tags import undeclared_tags, without_undeclared
from lensmux.adapters.spec import ServerConfig

URI = "file:///w/demo/tagged.py"


def _diag(line: int, message: str, severity: int, tags: list[int] | None = None) -> dict[str, Any]:
    rng = {"start": {"line": line, "character": 0}, "end": {"line": line, "character": 3}}
    diag: dict[str, Any] = {"range": rng, "message": message, "severity": severity, "source": "Pyright"}
    if tags is not None:
        diag["tags"] = tags
    return diag


# As the shared pyright (told the daemon takes every tag) publishes them.
ERROR = _diag(14, 'Type "Literal[\'x\']" is not assignable to declared type "int"', 1)
UNUSED = _diag(0, '"os" is not accessed', 4, [1])
UNREACHABLE = _diag(11, "Code is unreachable", 4, [1])
DEPRECATED = _diag(10, 'The function "old" is deprecated', 4, [2])
PUBLISHED = [UNUSED, DEPRECATED, UNREACHABLE, ERROR]


def _caps(value_set: Any) -> dict[str, Any]:
    return {"textDocument": {"publishDiagnostics": {"tagSupport": {"valueSet": value_set}}}}


def test_the_tags_a_client_did_not_list_are_pyrights_it_lacks() -> None:
    assert undeclared_tags({}) == {1, 2}
    assert undeclared_tags({"textDocument": {"publishDiagnostics": {"relatedInformation": True}}}) == {1, 2}
    assert undeclared_tags(_caps([1])) == {2}
    assert undeclared_tags(_caps([2])) == {1}
    assert undeclared_tags(_caps([1, 2])) == frozenset()
    assert undeclared_tags(_caps("1,2")) == {1, 2}


def test_hints_of_undeclared_tags_are_dropped_the_rest_kept_in_order() -> None:
    pairs = without_undeclared(PUBLISHED, frozenset({1, 2}))
    assert pairs == [(ERROR, ERROR)]
    pairs = without_undeclared(PUBLISHED, frozenset({2}))
    assert pairs is not None and [shown for shown, _ in pairs] == [UNUSED, UNREACHABLE, ERROR]
    assert all(shown is server for shown, server in pairs)


def test_a_set_without_such_a_hint_is_passed_on_untouched() -> None:
    assert without_undeclared([ERROR, UNUSED], frozenset()) is None
    assert without_undeclared([ERROR, UNUSED], frozenset({2})) is None
    assert without_undeclared([], frozenset({1, 2})) is None


def test_the_adapter_words_per_client_by_tag_support() -> None:
    adapter = PyrightAdapter(ServerConfig(name="pyright", command="pyright-langserver"))
    assert adapter.diagnostics_for_client(URI, PUBLISHED, _caps([1, 2])) is None
    assert adapter.diagnostics_for_client(URI, PUBLISHED, {}) == [(ERROR, ERROR)]


def test_the_quick_check_says_so_for_every_client_the_wording_changes() -> None:
    # A pull answer pyright gave goes undecoded to a client the quick check passes over.
    adapter = PyrightAdapter(ServerConfig(name="pyright", command="pyright-langserver"))
    for caps in ({}, _caps([1]), _caps([2]), _caps([1, 2]), _caps("1,2")):
        worded = adapter.diagnostics_for_client(URI, PUBLISHED, caps) is not None
        assert adapter.words_diagnostics_for(caps) == worded, caps
