"""What an embedding model directory holds, and the errors of the embedding area.

Error tree (every error of ``lensmux.graph.embedding`` derives from one base)::

    EmbeddingError
     ├── ModelNotInstalled   model files are absent (packaged weights, model.onnx, tokenizer.json)
     ├── ModelSpecInvalid    a model directory's description is unreadable or unsupported
     ├── ModelCorrupt        cached or user model fails its checksum or does not load
     ├── ModelBuildFailed    building or quantising the ONNX graph failed
     ├── CacheUnavailable    the model cache directory cannot be created, locked or written
     └── InferenceFailed     onnxruntime rejected a run

A model directory is what ``Embedder.open_directory`` loads: ``model.onnx`` plus
``tokenizer.json``, described by a ``lensmux-model.json`` (a ``ModelSpec``) or,
failing that, by the sentence-transformers files ``1_Pooling/config.json``,
``modules.json`` and ``sentence_bert_config.json``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import msgspec

SPEC_FILE = "lensmux-model.json"
DEFAULT_MAX_TOKENS = 256

_NORMALIZE_MODULE = "sentence_transformers.models.Normalize"


class EmbeddingError(Exception):
    """Base of every error raised by lensmux.graph.embedding."""


class ModelNotInstalled(EmbeddingError):
    """The model's files are not on disk."""


class ModelSpecInvalid(EmbeddingError):
    """A model directory's description is unreadable or asks for something unsupported."""


class ModelCorrupt(EmbeddingError):
    """A model file does not match its manifest or cannot be loaded."""


class ModelBuildFailed(EmbeddingError):
    """Building the ONNX model from the packaged weights failed."""


class CacheUnavailable(EmbeddingError):
    """The model cache directory cannot be created, locked or written."""


class InferenceFailed(EmbeddingError):
    """onnxruntime failed to run the model on a batch."""


Pooling = Literal["mean", "cls"]


class ModelSpec(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """How to run an ONNX sentence-embedding model: files, output, pooling, token window.

    ``output`` names the graph output to read; ``None`` picks ``sentence_embedding`` when
    the graph has it, else its first output. A 2-D output is taken as pooled sentence
    vectors; a 3-D output ([batch, seq, hidden], e.g. ``last_hidden_state``) is pooled in
    numpy with ``pooling`` over the attention mask. ``normalize`` L2-normalises the result.
    ``query_prefix`` and ``passage_prefix`` go in front of every query and every indexed
    text, for models trained with them (E5's ``query: `` and ``passage: ``).
    """

    name: str
    model_file: str = "model.onnx"
    tokenizer_file: str = "tokenizer.json"
    output: str | None = None
    pooling: Pooling = "mean"
    normalize: bool = True
    max_tokens: int = DEFAULT_MAX_TOKENS
    dim: int | None = None
    query_prefix: str = ""
    passage_prefix: str = ""

    def __post_init__(self) -> None:
        if not self.name:
            raise ValueError("name must not be empty")
        if not 2 < self.max_tokens <= 8192:
            raise ValueError(f"max_tokens must be in 3..8192, got {self.max_tokens}")
        if self.dim is not None and self.dim <= 0:
            raise ValueError(f"dim must be positive, got {self.dim}")


def encode_spec(spec: ModelSpec) -> bytes:
    """Serialise a spec as the pretty JSON stored in ``lensmux-model.json``."""
    return msgspec.json.format(msgspec.json.encode(spec), indent=2) + b"\n"


def decode_spec(data: bytes, *, origin: str) -> ModelSpec:
    """Parse a ``lensmux-model.json`` body; ``origin`` names it in the error."""
    try:
        return msgspec.json.decode(data, type=ModelSpec)
    except (msgspec.ValidationError, msgspec.DecodeError) as exc:
        raise ModelSpecInvalid(f"{origin}: {exc}") from exc


def read_model_spec(directory: Path) -> ModelSpec:
    """Describe the model in ``directory`` and check that its files exist."""
    if not directory.is_dir():
        raise ModelNotInstalled(f"model directory {directory} does not exist")
    spec_path = directory / SPEC_FILE
    if spec_path.is_file():
        spec = decode_spec(_read_bytes(spec_path), origin=str(spec_path))
    else:
        spec = _spec_from_sentence_transformers(directory)
    for file_name in (spec.model_file, spec.tokenizer_file):
        if not (directory / file_name).is_file():
            raise ModelNotInstalled(f"model directory {directory} has no {file_name}")
    return spec


def _spec_from_sentence_transformers(directory: Path) -> ModelSpec:
    """Derive a spec from the sentence-transformers config files, defaulting what is absent."""
    pooling: Pooling = "mean"
    pooling_path = directory / "1_Pooling" / "config.json"
    if pooling_path.is_file():
        pooling = _pooling_mode(_read_json(pooling_path), pooling_path)
    normalize = True
    modules_path = directory / "modules.json"
    if modules_path.is_file():
        modules = _read_json(modules_path)
        if not isinstance(modules, list):
            raise ModelSpecInvalid(f"{modules_path}: expected a list of modules")
        normalize = any(isinstance(m, dict) and m.get("type") == _NORMALIZE_MODULE for m in modules)
    max_tokens = DEFAULT_MAX_TOKENS
    bert_path = directory / "sentence_bert_config.json"
    if bert_path.is_file():
        bert = _read_json(bert_path)
        if isinstance(bert, dict) and isinstance(bert.get("max_seq_length"), int):
            max_tokens = bert["max_seq_length"]
    try:
        return ModelSpec(
            name=directory.name or "model",
            pooling=pooling,
            normalize=normalize,
            max_tokens=max_tokens,
        )
    except ValueError as exc:
        raise ModelSpecInvalid(f"{directory}: {exc}") from exc


def _pooling_mode(config: object, origin: Path) -> Pooling:
    """Map the sentence-transformers pooling flags onto the modes lensmux implements."""
    if not isinstance(config, dict):
        raise ModelSpecInvalid(f"{origin}: expected a JSON object")
    enabled = sorted(k for k, v in config.items() if k.startswith("pooling_mode_") and v is True)
    if enabled == ["pooling_mode_mean_tokens"]:
        return "mean"
    if enabled == ["pooling_mode_cls_token"]:
        return "cls"
    raise ModelSpecInvalid(f"{origin}: pooling {enabled or 'none'} is not supported (only mean or cls tokens)")


def _read_bytes(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise ModelSpecInvalid(f"cannot read {path}: {exc}") from exc


def _read_json(path: Path) -> object:
    try:
        return msgspec.json.decode(_read_bytes(path))
    except msgspec.DecodeError as exc:
        raise ModelSpecInvalid(f"{path}: {exc}") from exc
