"""The default token budget adapts to models whose window is wider than it."""

from __future__ import annotations

import msgspec
import pytest

from lensmux.graph.embedding.embedder import Embedder
from lensmux.graph.embedding.inference.batching import DEFAULT_TOKEN_BUDGET
from lensmux.graph.embedding.model.store import CachedModel


@pytest.mark.slow
def test_a_model_with_a_window_wider_than_the_default_budget_opens_with_default_settings(
    fp32_model: CachedModel,
) -> None:
    wide = DEFAULT_TOKEN_BUDGET * 2
    spec = msgspec.structs.replace(fp32_model.spec, max_tokens=wide)
    embedder = Embedder(
        model=fp32_model.model_bytes,
        tokenizer_json=fp32_model.tokenizer_json,
        spec=spec,
        model_dir=fp32_model.directory,
    )
    assert embedder.info().token_budget == wide
    assert embedder.embed(["open the socket", "close it"]).shape == (2, embedder.dim)


@pytest.mark.slow
def test_an_explicit_budget_below_one_window_is_refused(fp32_model: CachedModel) -> None:
    with pytest.raises(ValueError, match="below one full text"):
        Embedder(
            model=fp32_model.model_bytes,
            tokenizer_json=fp32_model.tokenizer_json,
            spec=fp32_model.spec,
            model_dir=fp32_model.directory,
            token_budget=fp32_model.spec.max_tokens - 1,
        )
