"""Embedding fixtures: one model cache per test session, so each model is built once."""

from __future__ import annotations

from pathlib import Path

import pytest

from lensmux.graph.embedding.embedder import Embedder
from lensmux.graph.embedding.model.store import CachedModel, ensure_model


@pytest.fixture(scope="session")
def xdg_cache_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A private XDG_CACHE_HOME shared by the whole session (set per test where needed)."""
    return tmp_path_factory.mktemp("xdg-cache")


@pytest.fixture(scope="session")
def model_cache_root(xdg_cache_home: Path) -> Path:
    """Where lensmux puts models under ``xdg_cache_home``."""
    return xdg_cache_home / "lensmux" / "models"


@pytest.fixture(scope="session")
def fp32_model(model_cache_root: Path) -> CachedModel:
    """The float32 default model, built into the session cache."""
    return ensure_model("fp32", cache_root=model_cache_root)


@pytest.fixture(scope="session")
def int8_model(model_cache_root: Path) -> CachedModel:
    """The int8 default model (what users get), built into the session cache."""
    return ensure_model("int8", cache_root=model_cache_root)


@pytest.fixture(scope="session")
def fp32_embedder(fp32_model: CachedModel, model_cache_root: Path) -> Embedder:
    """An Embedder over the float32 model."""
    return Embedder.open_default("fp32", cache_root=model_cache_root)


@pytest.fixture(scope="session")
def int8_embedder(int8_model: CachedModel, model_cache_root: Path) -> Embedder:
    """An Embedder over the int8 model."""
    return Embedder.open_default("int8", cache_root=model_cache_root)
