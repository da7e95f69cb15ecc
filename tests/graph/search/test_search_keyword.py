"""Stage 1 inputs: the keyword expression over the real FTS5 index, and the anchors a query names."""

from __future__ import annotations

from pathlib import Path

import pytest
from search_projects import UPLOADER, SearchedIndex, indexed

from lensmux.graph.search.candidates.anchors import Mention, extract_mentions
from lensmux.graph.search.candidates.seeds import keyword_expression

pytestmark = pytest.mark.anyio


def _names(ix: SearchedIndex, expression: str | None, k: int = 5) -> list[str]:
    assert expression is not None
    names = []
    for cid, _ in ix.store.fts_search(expression, k):
        chunk = ix.store.chunk(cid)
        assert chunk is not None
        names.append(chunk.name)
    return names


async def test_natural_language_finds_the_function_whose_docstring_says_it(tmp_path: Path) -> None:
    async with indexed(tmp_path, UPLOADER) as ix:
        # "uploads"/"failed" never appear in backoff_send; "upload"/"failed" do (prefix stems).
        assert _names(ix, keyword_expression("retry failed uploads"))[0] == "Uploader.backoff_send"
        assert _names(ix, keyword_expression("which code retried the upload"))[0].endswith("backoff_send")
        assert _names(ix, keyword_expression("downloading objects from a bucket"))[0].endswith(
            "BucketStorage.get_object"
        )


async def test_stop_words_do_not_decide_the_ranking(tmp_path: Path) -> None:
    async with indexed(tmp_path, UPLOADER) as ix:
        with_filler = _names(ix, keyword_expression("how is the whole file read from the disk"), 1)
        assert with_filler == _names(ix, keyword_expression("whole file read disk"), 1)
        assert with_filler[0] == "read_file"


async def test_identifier_spellings_meet_in_the_index(tmp_path: Path) -> None:
    async with indexed(tmp_path, UPLOADER) as ix:
        for query in ("backoff_send", "backoffSend", "BackoffSend", "backoff send"):
            assert _names(ix, keyword_expression(query), 1)[0].endswith("backoff_send"), query


def test_expression_is_plain_terms_whatever_the_user_types() -> None:
    assert keyword_expression("the of and") == '"the" OR "of" OR "and"', "only stop words: keep them"
    assert keyword_expression("?!") is None
    expression = keyword_expression('NEAR(a b) AND -c* "d')
    assert expression is not None
    for operator_text in ("NEAR(", " AND ", "-c"):
        assert operator_text not in expression


def test_mentions_are_code_shaped_text_only() -> None:
    assert extract_mentions("retry failed uploads") == []
    assert extract_mentions("how does `backoff_send` retry in pkg/uploader.py") == [
        Mention("backoff_send", "symbol", explicit=True),
        Mention("pkg/uploader.py", "file"),
    ]
    assert extract_mentions("Where is Uploader.send() used?") == [Mention("Uploader.send", "symbol")]
    assert [m.text for m in extract_mentions("HttpServer calls getUser and parse_url")] == [
        "HttpServer",
        "getUser",
        "parse_url",
    ]
    # A capitalised word mid-sentence may only name a class; at a sentence start it is just English.
    assert extract_mentions("Retry what implements Storage") == [Mention("Storage", "type")]
    assert extract_mentions("e.g. see version 1.2.3 of config.json") == [Mention("config.json", "file")]
