"""Identifier splitting and FTS5 query building."""

from __future__ import annotations

import pytest

from lensmux.graph.index.identifiers import fts_document, fts_match_query, split_identifier


@pytest.mark.parametrize(
    ("word", "parts"),
    [
        ("backoff_send", ["backoff", "send"]),
        ("backoffSend", ["backoff", "send"]),
        ("BackoffSend", ["backoff", "send"]),
        ("HTTPServerError", ["http", "server", "error"]),
        ("utf8Decode", ["utf8", "decode"]),
        ("pkg.upload.backoff_send", ["pkg", "upload", "backoff", "send"]),
        ("ns::Outer::innerFn", ["ns", "outer", "inner", "fn"]),
        ("__init__", ["init"]),
        ("MAX_RETRIES", ["max", "retries"]),
        ("x", ["x"]),
    ],
)
def test_split_identifier(word: str, parts: list[str]) -> None:
    assert split_identifier(word) == parts


def test_document_keeps_the_identifier_and_adds_its_parts() -> None:
    words = fts_document("def backoffSend(max_tries): pass").split()
    assert words == ["def", "backoffsend", "backoff", "send", "max_tries", "max", "tries", "pass"]


def test_query_quotes_and_ors_terms_so_fts_syntax_is_inert() -> None:
    assert fts_match_query("backoff send") == '"backoff" OR "send"'
    assert fts_match_query("backoffSend") == '"backoffsend" OR "backoff" OR "send"'
    # FTS5 operators and punctuation become plain words (or vanish).
    assert fts_match_query('NEAR(a b) AND -c* "d') == '"near" OR "a" OR "b" OR "and" OR "c" OR "d"'
    assert fts_match_query("  ?!  ") is None
