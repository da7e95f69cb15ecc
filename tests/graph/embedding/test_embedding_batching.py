"""Sorting, dynamic padding and truncation never change what a text embeds to."""

from __future__ import annotations

from pathlib import Path

import anyio
import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import given
from hypothesis import strategies as st

from lensmux.graph.embedding.embedder import Embedder
from lensmux.graph.embedding.inference.batching import plan_batches
from lensmux.graph.embedding.inference.tokenizer import TextTokenizer
from lensmux.graph.embedding.model.weights import locate_packaged_model

SHORT = "open the socket"
LONGER = [
    "The supervisor restarts a crashed language server with exponential backoff, "
    "replays the cached initialize result to every client and fails pending requests.",
    "def merge(a, b):\n    out = []\n    while a and b:\n        out.append(a.pop(0) "
    "if a[0] < b[0] else b.pop(0))\n    return out + a + b",
]
LONG_WORDS = " ".join(f"token{i}" for i in range(600))


@pytest.fixture(scope="module")
def tokenizer() -> TextTokenizer:
    return TextTokenizer.from_file(locate_packaged_model() / "tokenizer.json", max_tokens=256)


@pytest.fixture(scope="module")
def fp32_budget_256(fp32_embedder: Embedder) -> Embedder:
    """The fp32 model with a token budget of one full-length text per batch."""
    return Embedder.open_directory(Path(fp32_embedder.info().model_dir), token_budget=256)


@pytest.mark.slow
def test_a_text_embeds_the_same_alone_and_padded_in_a_batch(fp32_embedder: Embedder) -> None:
    alone = fp32_embedder.embed([SHORT])[0]
    batched = fp32_embedder.embed([LONGER[0], SHORT, LONGER[1]])
    assert np.abs(batched[1] - alone).max() <= 1e-5


@pytest.mark.slow
def test_results_come_back_in_input_order(fp32_embedder: Embedder) -> None:
    texts = [SHORT, *LONGER, "x", LONG_WORDS]
    together = fp32_embedder.embed(texts)
    one_by_one = np.stack([fp32_embedder.embed_query(t) for t in texts])
    assert np.abs(together - one_by_one).max() <= 1e-5


@pytest.mark.slow
def test_small_token_budget_splits_batches_without_changing_results(
    fp32_embedder: Embedder, fp32_budget_256: Embedder
) -> None:
    texts = [*LONGER, SHORT, LONG_WORDS, "x"] * 3
    assert np.abs(fp32_embedder.embed(texts) - fp32_budget_256.embed(texts)).max() <= 1e-5


@pytest.mark.slow
def test_text_beyond_256_tokens_is_cut_off(fp32_embedder: Embedder) -> None:
    extended = LONG_WORDS + " and then a completely different ending about databases"
    first, second = fp32_embedder.embed([LONG_WORDS, extended])
    assert np.abs(first - second).max() <= 1e-6
    assert fp32_embedder.count_tokens(extended) > fp32_embedder.count_tokens(LONG_WORDS) > 256


def test_tokenizer_truncates_to_the_window_keeping_special_tokens(tokenizer: TextTokenizer) -> None:
    (ids,) = tokenizer.encode([LONG_WORDS])
    assert len(ids) == 256
    assert ids[0] == 101 and ids[-1] == 102  # [CLS] ... [SEP]


def test_count_tokens_sees_the_whole_text(tokenizer: TextTokenizer) -> None:
    assert tokenizer.count_tokens("hello world") == 2
    assert tokenizer.count_tokens(LONG_WORDS) > 600
    assert tokenizer.count_tokens_batch(["hello world", ""]) == [2, 0]


def test_batches_are_padded_to_their_longest_member_only(tokenizer: TextTokenizer) -> None:
    batch = tokenizer.encode_padded(["a b c", "a"])
    assert batch.input_ids.shape == (2, 5)  # [CLS] a b c [SEP]
    assert batch.attention_mask.tolist() == [[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]]
    assert batch.input_ids[1, 3:].tolist() == [0, 0]


def test_undecodable_source_bytes_still_tokenise(tokenizer: TextTokenizer) -> None:
    text = b"name = 'caf\xe9'".decode("utf-8", "surrogateescape")
    (ids,) = tokenizer.encode([text])
    assert len(ids) > 3
    assert tokenizer.count_tokens(text) == len(ids) - 2


@pytest.mark.slow
def test_empty_input_and_single_string_misuse(fp32_embedder: Embedder) -> None:
    assert fp32_embedder.embed([]).shape == (0, 384)
    with pytest.raises(TypeError, match="embed_query"):
        fp32_embedder.embed("not a list")


@pytest.mark.slow
def test_concurrent_callers_get_the_same_vectors(fp32_embedder: Embedder) -> None:
    texts = [SHORT, *LONGER, "x"]
    expected = fp32_embedder.embed(texts)
    results: list[npt.NDArray[np.float32]] = []

    async def one_call() -> None:
        results.append(await fp32_embedder.embed_async(texts))

    async def main() -> None:
        async with anyio.create_task_group() as tg:
            for _ in range(4):
                tg.start_soon(one_call)

    anyio.run(main)
    assert len(results) == 4
    for vectors in results:
        assert np.abs(vectors - expected).max() <= 1e-5


@given(
    lengths=st.lists(st.integers(min_value=1, max_value=256), max_size=200),
    budget=st.integers(min_value=256, max_value=10_000),
    max_batch=st.integers(min_value=1, max_value=300),
)
def test_batch_plan_covers_everything_within_budget(lengths: list[int], budget: int, max_batch: int) -> None:
    ordered = sorted(lengths, reverse=True)
    batches = plan_batches(ordered, budget, max_batch)
    assert [i for b in batches for i in b] == list(range(len(ordered)))
    for b in batches:
        assert 1 <= len(b) <= max_batch
        assert len(b) * ordered[b.start] <= budget
