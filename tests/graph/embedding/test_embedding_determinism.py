"""A text embeds to the same bits whatever it is batched with: re-indexing is reproducible."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from lensmux.graph.embedding.embedder import Embedder
from lensmux.graph.embedding.inference.batching import padded_widths, plan_batches
from lensmux.graph.embedding.model.store import CachedModel

pytestmark = pytest.mark.slow

TEXTS = [
    "open the socket",
    "x",
    "def merge(a, b):\n    out = []\n    while a and b:\n        out.append(a.pop(0) if a[0] < b[0] else b.pop(0))\n"
    "    return out + a + b",
    "The supervisor restarts a crashed language server with exponential backoff, replays the cached "
    "initialize result to every client and fails pending requests. " * 4,
    "SELECT id, name FROM users WHERE last_login > now() - interval '30 days';",
    "std::unique_ptr<Node> Tree::insert(std::unique_ptr<Node> root, int key);",
    " ".join(f"token{i}" for i in range(400)),  # beyond the window
    'if err != nil { return fmt.Errorf("open %s: %w", path, err) }',
]


@pytest.mark.parametrize("precision", ["int8", "fp32"])
def test_same_text_alone_and_in_different_batches_is_bit_identical(
    precision: str, int8_embedder: Embedder, fp32_embedder: Embedder
) -> None:
    embedder = int8_embedder if precision == "int8" else fp32_embedder
    alone = np.stack([embedder.embed([text])[0] for text in TEXTS])
    together = embedder.embed(TEXTS)
    reversed_order = embedder.embed(TEXTS[::-1])[::-1]
    with_others = embedder.embed(["unrelated words " * 30, *TEXTS[2:6], "short"])[1:5]
    assert np.array_equal(together, alone)
    assert np.array_equal(reversed_order, alone)
    assert np.array_equal(with_others, alone[2:6])
    assert np.array_equal(np.stack([embedder.embed_query(t) for t in TEXTS]), alone)


def test_int8_is_close_to_float32_alone_and_batched(int8_embedder: Embedder, fp32_embedder: Embedder) -> None:
    cosines = (int8_embedder.embed(TEXTS) * fp32_embedder.embed(TEXTS)).sum(axis=1)
    assert float(cosines.mean()) >= 0.99


def test_batches_hold_one_padded_width_each() -> None:
    lengths = np.array([3, 17, 16, 250, 256, 40, 33], dtype=np.int64)
    widths = padded_widths(lengths, 256)
    assert widths.tolist() == [16, 32, 16, 256, 256, 48, 48]
    ordered = sorted(widths.tolist(), reverse=True)
    for batch in plan_batches(ordered, 2048):
        assert len({ordered[i] for i in batch}) == 1


def test_calls_from_many_threads_at_once_get_the_vectors_of_one_call_alone(
    int8_embedder: Embedder, int8_model: CachedModel, model_cache_root: Path
) -> None:
    # Many short runs per call, so a call's runs go side by side and calls share the run slots.
    texts = [f"{text} {i}" for i in range(12) for text in TEXTS]
    alone = int8_embedder.embed(texts)
    calls = [texts[i::3] for i in range(3)]
    with ThreadPoolExecutor(3) as pool:
        together = list(pool.map(int8_embedder.embed, calls * 2))
    for got, part in zip(together, calls * 2, strict=True):
        assert np.array_equal(got, alone[[texts.index(t) for t in part]])
    one_run_at_a_time = Embedder.open_default("int8", cache_root=model_cache_root, threads=1)
    assert np.array_equal(one_run_at_a_time.embed(texts), alone)
