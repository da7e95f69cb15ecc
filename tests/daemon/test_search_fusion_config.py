"""`[daemon.search.fusion]` reaches the engine (weights, coverage, strength); `[daemon.embedding]` names the model."""

from __future__ import annotations

from pathlib import Path

import pytest

from lensmux.daemon.config import ConfigError, load_config
from lensmux.daemon.search.service import engine_config
from lensmux.graph.search import FusionWeights


def _config(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "config.toml"
    path.write_text(text)
    return path


def test_fusion_table_sets_method_and_weights(tmp_path: Path) -> None:
    path = _config(tmp_path, '[daemon.search.fusion]\nmethod = "rrf"\nkeyword_c = 2.0\ncoverage = 1.5\n')
    fusion = engine_config(load_config(path, explicit=True).daemon.search).fusion
    assert (fusion.method, fusion.keyword_c, fusion.coverage) == ("rrf", 2.0, 1.5)
    assert fusion.vector == FusionWeights().vector, "what the file leaves out keeps the engine default"


def test_unknown_fusion_method_is_a_clear_error(tmp_path: Path) -> None:
    path = _config(tmp_path, '[daemon.search.fusion]\nmethod = "borda"\n')
    with pytest.raises(ConfigError, match="method"):
        load_config(path, explicit=True)


def test_keyword_strength_is_set_from_the_file_and_zero_turns_it_off(tmp_path: Path) -> None:
    assert FusionWeights().strength > 0, "on by default"
    path = _config(tmp_path, "[daemon.search.fusion]\nstrength = 0\n")
    assert engine_config(load_config(path, explicit=True).daemon.search).fusion.strength == 0.0


def test_embedding_model_is_chosen_by_name_and_an_unknown_one_is_a_clear_error(tmp_path: Path) -> None:
    assert load_config(_config(tmp_path, ""), explicit=True).daemon.embedding.model == "all-MiniLM-L6-v2"
    path = _config(tmp_path, '[daemon.embedding]\nmodel = "multilingual-e5-small"\n')
    assert load_config(path, explicit=True).daemon.embedding.model == "multilingual-e5-small"
    with pytest.raises(ConfigError, match="model"):
        load_config(_config(tmp_path, '[daemon.embedding]\nmodel = "bge-small"\n'), explicit=True)


def test_the_learned_ranker_and_the_declaration_share_are_set_from_the_file(tmp_path: Path) -> None:
    path = _config(tmp_path, "[daemon.search]\nlearned_ranker = false\n[daemon.search.fusion]\ndeclaration = 1.0\n")
    config = engine_config(load_config(path, explicit=True).daemon.search)
    assert config.learned_ranker is False and config.fusion.declaration == 1.0
    with pytest.raises(ConfigError, match="declaration"):
        load_config(_config(tmp_path, "[daemon.search.fusion]\ndeclaration = 2.0\n"), explicit=True)
