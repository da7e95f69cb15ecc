"""The query adapter with the learned ranker (issue 22): rows kept apart, queries as a daemon makes them, the rule.

bench/search/train_ranker.py --adapter builds its rows from the adapter's query vectors and
keeps them beside the plain rows; bench/search/adapter_ranker.py decides from the held-out
numbers whether the retrained ranker with the adapter ships.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from bench.search import adapter_ranker, train_ranker
from bench.search.quality import use_query_adapter
from lensmux.graph.embedding.query.query_adapter import QueryAdapter
from lensmux.graph.search.ranker import FEATURES


def _adapter(name: str, seed: int) -> QueryAdapter:
    rng = np.random.default_rng(seed)
    return QueryAdapter.from_factors(rng.standard_normal((2, 8, 2)) * 0.3, name)


def test_queries_are_the_adapters_of_the_plain_vectors_each_embedded_once() -> None:
    calls: list[str] = []

    def plain(text: str) -> Any:
        calls.append(text)
        return np.random.default_rng(len(text)).standard_normal(8).astype(np.float32)

    bench: Any = SimpleNamespace(offline=SimpleNamespace(embedder=SimpleNamespace(embed_query=plain)))
    adapter = _adapter("test", 1)
    use_query_adapter(bench, adapter)
    got = bench.offline.embedder.embed_query("parse the file")
    # What Embedder.embed_query does with an adapter (pinned against the real model in
    # tests/graph/embedding/test_query_adapter.py): apply it to the plain vector.
    assert np.array_equal(got, adapter.apply(plain("parse the file")))
    assert not np.array_equal(got, plain("parse the file"))
    bench.offline.embedder.embed_query("parse the file")
    assert calls.count("parse the file") == 3  # once for the bench, twice for the checks above


def _fake_rows(name: str, value: float) -> train_ranker.Rows:
    matrix = np.full((3, len(FEATURES)), value)
    return train_ranker.Rows(name, matrix, np.array([True, False, False]), np.array([0, 3], dtype=np.int64))


def test_adapter_rows_are_kept_beside_the_plain_ones_and_rebuilt_for_another_adapter(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(train_ranker, "ROWS_DIR", tmp_path)
    built: list[float] = []

    def collect(value: float) -> Any:
        def rows(bench: Any, config: Any) -> train_ranker.Rows:
            built.append(value)
            return _fake_rows("p", value)

        return rows

    first, second = _adapter("first", 1), _adapter("second", 2)
    monkeypatch.setattr(train_ranker, "collect_rows", collect(0.0))
    plain = train_ranker._rows_for("p", None, None, False, None)  # type: ignore[arg-type]
    monkeypatch.setattr(train_ranker, "collect_rows", collect(1.0))
    adapted = train_ranker._rows_for("p", None, None, False, first)  # type: ignore[arg-type]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p-adapter.npz", "p.npz"]
    assert built == [0.0, 1.0]
    # Each kind read back from its own file, not rebuilt.
    monkeypatch.setattr(train_ranker, "collect_rows", collect(2.0))
    assert np.array_equal(train_ranker._rows_for("p", None, None, False, None).matrix, plain.matrix)  # type: ignore[arg-type]
    assert np.array_equal(train_ranker._rows_for("p", None, None, False, first).matrix, adapted.matrix)  # type: ignore[arg-type]
    assert built == [0.0, 1.0]
    # Rows another adapter made are not reused.
    assert train_ranker._rows_for("p", None, None, False, second).matrix[0, 0] == 2.0  # type: ignore[arg-type]
    assert built == [0.0, 1.0, 2.0]


def _score(mrr: float) -> dict[str, float]:
    return {"n": 100, "mrr@10": mrr, "hit@1": 0.0, "hit@10": 0.5}


def _rows(pairs: dict[str, tuple[float, float]]) -> dict[str, dict[str, Any]]:
    return {n: {"bm25": _score(0.3), "a": _score(a), "b": _score(a), "c": _score(c)} for n, (a, c) in pairs.items()}


def test_the_retrained_ranker_ships_only_above_on_the_mean_and_never_far_below_on_a_project() -> None:
    assert adapter_ranker.decide(_rows({"x": (0.50, 0.53), "y": (0.40, 0.391)}))["ship"]
    # A higher mean does not buy a project losing more than 0.01.
    lost = adapter_ranker.decide(_rows({"x": (0.50, 0.60), "y": (0.40, 0.385)}))
    assert not lost["ship"] and lost["worst"]["project"] == "y"
    # Equal is not better.
    assert not adapter_ranker.decide(_rows({"x": (0.50, 0.51), "y": (0.40, 0.39)}))["ship"]
