"""Search reasons in words, for `lensmux search` and search_code."""

from __future__ import annotations

from lensmux.graph.search.answer.reasons import describe_reason, describe_reasons


def test_each_reason_form_reads_as_words() -> None:
    assert describe_reason("seed:vector:0.55") == "similar meaning (0.55)"
    assert describe_reason("seed:keyword:2") == "keyword match (#2)"
    assert describe_reason("anchor:explicit_symbol") == "named in the query"
    assert describe_reason("expanded:called_by:Calculator.compute") == "called by Calculator.compute"
    assert describe_reason("expanded:calls:add") == "calls add"
    assert describe_reason("something:new") == "something:new"
    assert describe_reasons(["seed:keyword:1", "expanded:calls:add", "seed:mention", "x"]) == (
        "keyword match (#1); calls add; mentioned in the query"
    )
