"""A user-supplied ONNX model directory, described by ModelSpec or sentence-transformers files."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper

from lensmux.graph.embedding.embedder import Embedder
from lensmux.graph.embedding.inference.tokenizer import TextTokenizer
from lensmux.graph.embedding.model.store import CachedModel
from lensmux.graph.embedding.spec import (
    SPEC_FILE,
    ModelNotInstalled,
    ModelSpec,
    ModelSpecInvalid,
    decode_spec,
    encode_spec,
    read_model_spec,
)

TEXTS = [
    "parse the config file and fall back to defaults",
    "def load(path): return json.loads(Path(path).read_text())",
    "x",
]
ST_MODULES = [
    {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
    {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
    {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"},
]


def _hidden_state_model(sentence_model: bytes) -> bytes:
    """The same encoder ending at last_hidden_state, with an (unused) token_type_ids input."""
    model = onnx.load_from_string(sentence_model)
    graph = model.graph
    last_ln = [n for n in graph.node if n.op_type == "LayerNormalization"][-1]
    kept = [n for n in graph.node if not n.name.startswith(("pooling/", "normalize/"))]
    del graph.node[:]
    graph.node.extend(kept)
    graph.node.append(helper.make_node("Identity", [last_ln.output[0]], ["last_hidden_state"]))
    del graph.output[:]
    graph.output.append(
        helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, ["batch", "sequence", 384])
    )
    graph.input.append(helper.make_tensor_value_info("token_type_ids", TensorProto.INT64, ["batch", "sequence"]))
    onnx.checker.check_model(model)
    serialized: bytes = model.SerializeToString()
    return serialized


@pytest.fixture(scope="module")
def hidden_state_onnx(fp32_model: CachedModel, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("hidden-state") / "model.onnx"
    path.write_bytes(_hidden_state_model(fp32_model.model_bytes))
    return path


def _st_dir(root: Path, onnx_file: Path, tokenizer: str, *, pooling: str, normalize: bool) -> Path:
    """A directory laid out like a sentence-transformers ONNX export."""
    root.mkdir()
    (root / "model.onnx").symlink_to(onnx_file)
    (root / "tokenizer.json").write_text(tokenizer)
    (root / "1_Pooling").mkdir()
    flags = {"pooling_mode_cls_token": pooling == "cls", "pooling_mode_mean_tokens": pooling == "mean"}
    (root / "1_Pooling" / "config.json").write_text(json.dumps({"word_embedding_dimension": 384, **flags}))
    modules = ST_MODULES if normalize else ST_MODULES[:2]
    (root / "modules.json").write_text(json.dumps(modules))
    (root / "sentence_bert_config.json").write_text(json.dumps({"max_seq_length": 256}))
    return root


@pytest.mark.slow
def test_spec_described_directory_embeds_like_the_default(
    fp32_model: CachedModel, fp32_embedder: Embedder, tmp_path: Path
) -> None:
    (tmp_path / "encoder.onnx").write_bytes(fp32_model.model_bytes)
    (tmp_path / "vocab.json").write_text(fp32_model.tokenizer_json)
    spec = ModelSpec(name="my-minilm", model_file="encoder.onnx", tokenizer_file="vocab.json", dim=384)
    (tmp_path / SPEC_FILE).write_bytes(encode_spec(spec))
    embedder = Embedder.open_directory(tmp_path)
    assert embedder.info().name == "my-minilm"
    assert embedder.info().output == "sentence_embedding"
    assert np.abs(embedder.embed(TEXTS) - fp32_embedder.embed(TEXTS)).max() <= 1e-6


@pytest.mark.slow
def test_raw_hidden_states_are_mean_pooled_and_normalised_in_numpy(
    hidden_state_onnx: Path, fp32_model: CachedModel, fp32_embedder: Embedder, tmp_path: Path
) -> None:
    directory = _st_dir(tmp_path / "st", hidden_state_onnx, fp32_model.tokenizer_json, pooling="mean", normalize=True)
    embedder = Embedder.open_directory(directory)
    assert embedder.info().output == "last_hidden_state"
    assert embedder.dim == 384
    assert np.abs(embedder.embed(TEXTS) - fp32_embedder.embed(TEXTS)).max() <= 1e-5


@pytest.mark.slow
def test_cls_pooling_without_normalize_returns_the_raw_cls_vector(
    hidden_state_onnx: Path, fp32_model: CachedModel, tmp_path: Path
) -> None:
    directory = _st_dir(tmp_path / "st", hidden_state_onnx, fp32_model.tokenizer_json, pooling="cls", normalize=False)
    spec = read_model_spec(directory)
    assert (spec.pooling, spec.normalize, spec.max_tokens) == ("cls", False, 256)
    got = Embedder.open_directory(directory).embed(TEXTS)

    batch = TextTokenizer(fp32_model.tokenizer_json, max_tokens=256).encode_padded(TEXTS)
    session = ort.InferenceSession(str(hidden_state_onnx), providers=["CPUExecutionProvider"])
    (hidden,) = session.run(
        None,
        {
            "input_ids": batch.input_ids,
            "attention_mask": batch.attention_mask,
            "token_type_ids": np.zeros_like(batch.input_ids),
        },
    )
    assert np.abs(got - hidden[:, 0, :]).max() <= 1e-5
    assert not np.allclose(np.linalg.norm(got, axis=1), 1.0)


@pytest.mark.slow
def test_spec_dim_that_disagrees_with_the_model_is_refused(fp32_model: CachedModel, tmp_path: Path) -> None:
    (tmp_path / "model.onnx").write_bytes(fp32_model.model_bytes)
    (tmp_path / "tokenizer.json").write_text(fp32_model.tokenizer_json)
    (tmp_path / SPEC_FILE).write_bytes(encode_spec(ModelSpec(name="wrong", dim=768)))
    with pytest.raises(ModelSpecInvalid, match="dim 768"):
        Embedder.open_directory(tmp_path)


def test_spec_round_trips_through_json() -> None:
    spec = ModelSpec(name="m", output="last_hidden_state", pooling="cls", normalize=False, dim=768)
    assert decode_spec(encode_spec(spec), origin="test") == spec


@pytest.mark.parametrize(
    "body",
    [
        '{"name": "m", "pooling": "max"}',
        '{"name": "m", "poolng": "mean"}',
        '{"name": "m", "max_tokens": 1}',
        '{"name": ""}',
        "not json",
    ],
)
def test_bad_spec_files_are_reported(body: str, tmp_path: Path) -> None:
    (tmp_path / SPEC_FILE).write_text(body)
    with pytest.raises(ModelSpecInvalid, match=re.escape(SPEC_FILE)):
        read_model_spec(tmp_path)


def test_unsupported_sentence_transformers_pooling_is_reported(tmp_path: Path) -> None:
    (tmp_path / "1_Pooling").mkdir()
    (tmp_path / "1_Pooling" / "config.json").write_text('{"pooling_mode_max_tokens": true}')
    with pytest.raises(ModelSpecInvalid, match="pooling_mode_max_tokens"):
        read_model_spec(tmp_path)


def test_directory_without_model_file_is_not_installed(tmp_path: Path) -> None:
    (tmp_path / "tokenizer.json").write_text("{}")
    with pytest.raises(ModelNotInstalled, match=r"model\.onnx"):
        read_model_spec(tmp_path)
    with pytest.raises(ModelNotInstalled):
        Embedder.open_directory(tmp_path / "absent")
