"""The share of a query's words the keyword side's best hits contain."""

from __future__ import annotations

from lensmux.graph.search.candidates.coverage import coverage
from lensmux.graph.search.candidates.seeds import query_words

HEADERS = "def headers_as_dict(response):\n    return dict(response.headers)\n"
READABLE = "def is_readable(filename):\n    return os.path.isfile(filename) and os.access(filename, os.R_OK)\n"


def test_a_query_that_describes_the_code_is_covered_by_it() -> None:
    words = query_words("Return the response headers as a dict")
    assert coverage(words, [HEADERS]) == 1.0


def test_a_query_that_shares_one_word_with_the_hits_is_barely_covered() -> None:
    words = query_words("python check file is readonly")
    assert coverage(words, [HEADERS]) == 0.0
    assert 0.0 < coverage(words, [READABLE]) < 0.5, "only `file*` matches (filename)"


def test_the_best_hit_counts_and_no_query_words_means_no_coverage() -> None:
    words = query_words("Return the response headers as a dict")
    assert coverage(words, [READABLE, HEADERS]) == 1.0
    assert coverage([], [HEADERS]) == 0.0
