"""The query adapter: fitted reproducibly, applied to query vectors only, refused when its file is wrong."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pytest

from lensmux.graph.embedding.embedder import Embedder
from lensmux.graph.embedding.model.store import CachedModel
from lensmux.graph.embedding.query import adapter_training, query_adapter
from lensmux.graph.embedding.query.adapter_training import TrainConfig, apply_factors, fit, mrr
from lensmux.graph.embedding.query.query_adapter import AdapterInvalid, QueryAdapter, adapter_path, encode, load_for

DIM = 24
MODEL = "all-MiniLM-L6-v2"


def _normalised(rows: np.ndarray) -> np.ndarray:
    out: np.ndarray = rows / np.linalg.norm(rows, axis=1, keepdims=True)
    return out


def _pairs(n: int, seed: int, scale: float = 0.8, noise: float = 0.05) -> tuple[np.ndarray, np.ndarray]:
    """Queries and codes where each code is its query seen through a fixed distortion, plus noise."""
    rng = np.random.default_rng(seed)
    queries = _normalised(rng.standard_normal((n, DIM)))
    distortion = np.eye(DIM) + scale * np.random.default_rng(99).standard_normal((DIM, DIM)) / np.sqrt(DIM)
    codes = _normalised(queries @ distortion + noise * rng.standard_normal((n, DIM)))
    return queries, codes


CONFIG = TrainConfig(rank=4, batch=32, epochs=3, learning_rate=1e-2, seed=7)


def test_fitting_twice_gives_the_same_file_and_another_seed_does_not() -> None:
    queries, codes = _pairs(256, 1)
    validation = _pairs(64, 2)
    first = encode(fit(queries, codes, CONFIG, validation).factors(), "m")
    again = encode(fit(queries, codes, CONFIG, validation).factors(), "m")
    other = fit(queries, codes, TrainConfig(rank=4, batch=32, epochs=3, learning_rate=1e-2, seed=8), validation)
    assert first == again
    assert first != encode(other.factors(), "m")


def test_the_gradient_is_the_loss_slope() -> None:
    rng = np.random.default_rng(3)
    queries, codes = _pairs(16, 4)
    u = rng.standard_normal((DIM, 3)) * 0.3
    v = rng.standard_normal((DIM, 3)) * 0.3
    config = TrainConfig(rank=3, weight_decay=0.0)
    _, d_u, d_v = adapter_training._batch_gradients(queries, codes, u, v, config)
    step = 1e-6
    for param, grad in ((u, d_u), (v, d_v)):
        for index in [(0, 0), (5, 2), (DIM - 1, 1)]:
            saved = param[index]
            param[index] = saved + step
            up, _, _ = adapter_training._batch_gradients(queries, codes, u, v, config)
            param[index] = saved - step
            down, _, _ = adapter_training._batch_gradients(queries, codes, u, v, config)
            param[index] = saved
            assert (up - down) / (2 * step) == pytest.approx(grad[index], rel=1e-4, abs=1e-8)


def test_fitting_learns_a_distortion_it_was_shown() -> None:
    # A distortion strong enough that plain cosine finds a code's query first only one time in five.
    queries, codes = _pairs(1024, 5, scale=2.0, noise=0.3)
    validation = _pairs(256, 6, scale=2.0, noise=0.3)
    fitted = fit(queries, codes, TrainConfig(rank=8, batch=64, epochs=6, learning_rate=1e-2), validation)
    assert fitted.epoch > 0
    before, after = mrr(*validation), mrr(apply_factors(validation[0], fitted.u, fitted.v), validation[1])
    assert before < 0.3 and after > before + 0.3


def test_an_adapter_at_its_start_changes_nothing_and_always_gives_unit_vectors() -> None:
    queries, _ = _pairs(8, 7)
    rng = np.random.default_rng(0)
    start = QueryAdapter.from_factors(np.stack([rng.standard_normal((DIM, 4)), np.zeros((DIM, 4))]), "start")
    np.testing.assert_allclose(start.apply(queries.astype(np.float32)), queries, atol=1e-6)
    factors = rng.standard_normal((2, DIM, 4))
    moved = QueryAdapter.from_factors(factors, "moved").apply(queries.astype(np.float32))
    np.testing.assert_allclose(np.linalg.norm(moved, axis=1), 1.0, atol=1e-5)
    assert moved.dtype == np.float32
    # The shipped float32 apply is the training code's float64 formula.
    np.testing.assert_allclose(moved, apply_factors(queries, factors[0], factors[1]), atol=1e-5)


def _write(tmp_path: Path, data: bytes, name: str = MODEL) -> Path:
    path = tmp_path / f"{name}.adapter"
    path.write_bytes(data)
    return path


def test_a_file_round_trips_and_names_its_model_rank_and_checksum(tmp_path: Path) -> None:
    factors = np.random.default_rng(1).standard_normal((2, DIM, 4)).astype(np.float32)
    adapter = QueryAdapter.read(_write(tmp_path, encode(factors, "m")))
    assert adapter.model == "m" and adapter.dim == DIM and adapter.name.startswith("m r4 ")
    assert np.array_equal(adapter.u, factors[0]) and np.array_equal(adapter.v, factors[1])


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda data: data[:-8], "damaged"),
        (lambda data: data[:-8] + bytes(8), "damaged"),
        (lambda data: b"\x93NUMPY" + data, "not a lensmux-query-adapter"),
        (lambda data: b"", "not a lensmux-query-adapter"),
        (lambda data: data.replace(b'"dim": 24', b'"dim": 25'), "do not match the header's dim"),
    ],
)
def test_a_damaged_file_is_refused(tmp_path: Path, damage: object, message: str) -> None:
    data = encode(np.random.default_rng(1).standard_normal((2, DIM, 4)), "m")
    with pytest.raises(AdapterInvalid, match=message):
        QueryAdapter.read(_write(tmp_path, damage(data)))  # type: ignore[operator]


def test_a_wrong_file_leaves_queries_plain_and_says_why(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    factors = np.random.default_rng(1).standard_normal((2, DIM, 4))
    good = _write(tmp_path, encode(factors, MODEL))
    assert load_for(MODEL, DIM, good).adapter is not None
    cases = {
        "made for the model 'multilingual-e5-small'": _write(tmp_path, encode(factors, "multilingual-e5-small"), "e5"),
        f"maps {DIM}-wide vectors, the model gives 384": good,
        "cannot read": tmp_path / "missing.adapter",
        "damaged": _write(tmp_path, encode(factors, MODEL)[:-4], "cut"),
    }
    for why, path in cases.items():
        caplog.clear()
        with caplog.at_level(logging.ERROR, logger=query_adapter.__name__):
            choice = load_for(MODEL, 384, path)
        assert choice.adapter is None and choice.state.startswith("not used: ") and why in choice.state
        assert any("query adapter not used" in r.getMessage() and why in r.getMessage() for r in caplog.records)


def test_the_shipped_adapter_loads_for_its_model() -> None:
    choice = load_for(MODEL, 384)
    assert choice.adapter is not None, choice.state
    assert choice.adapter.dim == 384 and choice.state == choice.adapter.name
    # Small enough to ship inside the package.
    assert adapter_path(MODEL).stat().st_size < 200_000


@pytest.mark.slow
def test_only_queries_move_and_the_switch_turns_it_off(int8_model: CachedModel, model_cache_root: Path) -> None:
    rng = np.random.default_rng(2)
    adapter = QueryAdapter.from_factors(rng.standard_normal((2, 384, 8)) * 0.1, "test r8")
    plain = Embedder.open_default("int8", cache_root=model_cache_root)
    adapted = Embedder.open_default("int8", cache_root=model_cache_root, query_adapter=adapter)
    texts = ["parse the configuration file", "def load(path):\n    return json.loads(path.read_text())"]
    assert np.array_equal(adapted.embed(texts), plain.embed(texts))
    for text in texts:
        raw = plain.embed_query(text)
        assert np.array_equal(adapted.embed_query(text), adapter.apply(raw))
        assert not np.array_equal(adapted.embed_query(text), raw)
    one_by_one = np.stack([adapted.embed_query(text) for text in texts])
    assert np.array_equal(adapted.embed_queries(texts), one_by_one)
    assert np.array_equal(plain.embed_queries(texts), np.stack([plain.embed_query(text) for text in texts]))
    assert adapted.info().query_adapter == "test r8" and plain.info().query_adapter is None
    assert plain.info().query_adapter_state == "off"
    shipped = Embedder.open_default("int8", cache_root=model_cache_root, query_adapter=True)
    assert shipped.info().query_adapter is not None
    assert shipped.info().query_adapter_state == shipped.info().query_adapter == load_for(MODEL, 384).state


@pytest.mark.slow
def test_a_wrong_adapter_costs_the_model_nothing(
    int8_model: CachedModel, model_cache_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plain = Embedder.open_default("int8", cache_root=model_cache_root)
    narrow = QueryAdapter.from_factors(np.ones((2, DIM, 2)), "narrow r2")
    mismatched = Embedder.open_default("int8", cache_root=model_cache_root, query_adapter=narrow)
    assert mismatched.info().query_adapter is None
    assert mismatched.info().query_adapter_state.startswith("not used: query adapter narrow r2 maps 24-wide")
    # A shipped file damaged on disk: the model loads, queries stay plain.
    monkeypatch.setattr(query_adapter, "ADAPTER_DIR", tmp_path)
    _write(tmp_path, b"not an adapter\n")
    damaged = Embedder.open_default("int8", cache_root=model_cache_root, query_adapter=True)
    assert damaged.info().query_adapter is None and "not a lensmux-query-adapter" in damaged.info().query_adapter_state
    for embedder in (mismatched, damaged):
        assert np.array_equal(embedder.embed_query("read a file"), plain.embed_query("read a file"))


def test_a_model_without_a_shipped_adapter_gets_none_quietly(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger=query_adapter.__name__):
        choice = load_for("multilingual-e5-small", 384)
    assert choice.adapter is None and choice.state == "none ships for multilingual-e5-small"
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
