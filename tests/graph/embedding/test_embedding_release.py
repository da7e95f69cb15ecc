"""An idle model leaves memory and comes back on next use with the same answers."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from lensmux.graph.embedding.embedder import Embedder
from lensmux.graph.embedding.model.store import CachedModel

TEXTS = ["def parse_header(block): return int(block)", "a function that reads a config file"]


def test_a_released_model_embeds_bit_identically_after_loading_again(
    int8_model: CachedModel, model_cache_root: Path
) -> None:
    embedder = Embedder.open_default("int8", cache_root=model_cache_root)
    before = embedder.embed(TEXTS)
    tokens = embedder.count_tokens(TEXTS[0])
    released = embedder.release_if_idle(0.0)
    loaded_after_release = embedder.loaded
    # A count it has made is remembered (graph/embedding/inference/token_memo.py): no need for the model.
    tokens_again = embedder.count_tokens(TEXTS[0])
    loaded_after_a_remembered_count = embedder.loaded
    new_text_tokens = embedder.count_tokens(TEXTS[1])
    assert released and not loaded_after_release
    assert tokens_again == tokens and not loaded_after_a_remembered_count
    assert new_text_tokens > 0 and embedder.loaded
    assert embedder.release_if_idle(0.0)
    assert np.array_equal(embedder.embed(TEXTS), before)


def test_a_recently_used_model_is_kept(int8_model: CachedModel, model_cache_root: Path) -> None:
    embedder = Embedder.open_default("int8", cache_root=model_cache_root)
    embedder.embed(TEXTS)
    assert not embedder.release_if_idle(3600.0)
    assert embedder.loaded
