"""A text's token count is tokenised once and remembered: a clone or a second worktree pays for it once (issue 23)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from lensmux.graph.embedding.embedder import Embedder
from lensmux.graph.embedding.inference.token_memo import TokenMemo
from lensmux.graph.embedding.inference.tokenizer import TextTokenizer
from lensmux.graph.embedding.model.store import CachedModel

TEXTS = [
    "# python tornado/httputil.py function parse_headers\nparse headers httputil\ndef parse_headers(data):",
    "int BrotliEncoderCompress(int quality, size_t size) { return 0; }",
    "broken \udcff surrogate from a file read with surrogateescape",
    "",
]


def test_the_embedder_tokenises_a_text_once_and_counts_it_as_the_tokenizer_does(
    int8_model: CachedModel, model_cache_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    embedder = Embedder.open_default("int8", cache_root=model_cache_root)
    tokenised: list[str] = []
    plain = TextTokenizer.count_tokens_batch

    def counting(self: TextTokenizer, texts: Sequence[str]) -> list[int]:
        tokenised.extend(texts)
        return plain(self, texts)

    monkeypatch.setattr(TextTokenizer, "count_tokens_batch", counting)
    first = [embedder.count_tokens(t) for t in TEXTS]
    again = embedder.count_tokens_batch([*TEXTS, TEXTS[0]])
    assert again == [*first, first[0]]
    assert sorted(tokenised) == sorted(TEXTS), "each text went to the tokenizer once"
    fresh = Embedder.open_default("int8", cache_root=model_cache_root)
    monkeypatch.setattr(TextTokenizer, "count_tokens_batch", plain)
    assert [fresh.count_tokens(t) for t in TEXTS] == first


def _length_counter(asked: list[str]) -> Callable[[Sequence[str]], list[int]]:
    """A stand-in tokenizer: a text's length is its count; every text it is given goes to `asked`."""

    def count(texts: Sequence[str]) -> list[int]:
        asked.extend(texts)
        return [len(t) for t in texts]

    return count


def test_the_memo_keeps_the_most_recently_used_counts_within_its_limit() -> None:
    asked: list[str] = []
    count = _length_counter(asked)

    memo = TokenMemo(limit=2)
    assert memo.counts(["a", "bb", "a"], count) == [1, 2, 1] and asked == ["a", "bb"]
    memo.counts(["a"], count)  # "a" is now the most recently used; "bb" goes first
    memo.counts(["ccc"], count)
    asked.clear()
    assert memo.counts(["a", "ccc", "bb"], count) == [1, 3, 2]
    assert asked == ["bb"] and len(memo) == 2
    assert (memo.hits, memo.misses) == (3, 5)


def test_a_memo_of_no_entries_remembers_nothing() -> None:
    asked: list[str] = []
    count = _length_counter(asked)

    memo = TokenMemo(limit=0)
    assert memo.counts(["a", "bb"], count) == [1, 2]
    assert memo.counts(["a"], count) == [1]
    assert asked == ["a", "bb", "a"]
    assert memo.stats() == {"entries": 0, "limit": 0, "hits": 0, "misses": 0}
