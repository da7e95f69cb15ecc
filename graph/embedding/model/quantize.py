"""The int8 model: built straight from the weights, then gated on agreement with float32.

The graph is the float32 encoder with int8 weight GEMMs and per-token int8 activations
(``int8_ops`` says why per token); the self-test compares it with the float32 model on
probe texts and refuses a build that strays.
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import numpy.typing as npt
import onnx

from lensmux.graph.embedding.inference.runtime import (
    SessionIO,
    available_cores,
    open_session,
    run_session,
)
from lensmux.graph.embedding.inference.tokenizer import TextTokenizer
from lensmux.graph.embedding.model.onnx_builder import build_encoder
from lensmux.graph.embedding.model.weights import BertWeights
from lensmux.graph.embedding.spec import CacheUnavailable, EmbeddingError, ModelBuildFailed

log = logging.getLogger(__name__)

QUANTIZATION = {
    "method": "lensmux.graph.embedding.model.int8_ops",
    "weight_type": "QInt8",
    "per_channel": "true",
    "activations": "per-token symmetric int8 (uint8, zero point 128)",
    "word_embeddings": "int8 per row",
}
# Below this the int8 model is refused: a correct build measures ~0.998.
MIN_MEAN_COSINE = 0.98

# Short and long, code and prose: quantisation error shows differently on each.
PROBE_TEXTS = (
    "retry failed uploads with exponential backoff",
    "def backoff_send(payload, retries=5):\n    for attempt in range(retries):\n"
    "        try:\n            return post(payload)\n        except Timeout:\n"
    "            time.sleep(2 ** attempt)",
    "The language server crashed three times and was restarted by the supervisor.",
    "SELECT id, name FROM users WHERE last_login > now() - interval '30 days';",
    "x",
    "std::unique_ptr<Node> Tree::insert(std::unique_ptr<Node> root, int key);",
    "Cosine similarity of unit vectors equals their dot product.",
    'if err != nil { return fmt.Errorf("open %s: %w", path, err) }',
)


def quantize_int8(weights: BertWeights, int8_path: Path, metadata: dict[str, str] | None = None) -> None:
    """Write the int8 encoder for ``weights`` to ``int8_path``."""
    model = build_encoder(weights, metadata=metadata, int8=True)
    try:
        onnx.save_model(model, int8_path)
    except (OSError, ValueError) as exc:
        raise CacheUnavailable(f"cannot write {int8_path}: {exc}") from exc


def probe(model: bytes, tokenizer: TextTokenizer, label: str) -> npt.NDArray[np.float32]:
    """Embed ``PROBE_TEXTS`` with a freshly built model and check the vectors are sane."""
    batch = tokenizer.encode_padded(PROBE_TEXTS)
    try:
        session = open_session(model, threads=min(2, available_cores()), origin=label)
        io = SessionIO.inspect(session, "sentence_embedding", label)
        vectors = run_session(session, io, batch)
    except EmbeddingError as exc:
        raise ModelBuildFailed(f"the freshly built {label} does not run: {exc}") from exc
    norms = np.linalg.norm(vectors, axis=1)
    if vectors.shape[0] != len(PROBE_TEXTS) or not np.allclose(norms, 1.0, atol=1e-3):
        raise ModelBuildFailed(
            f"the freshly built {label} returns {vectors.shape} vectors with norms "
            f"{norms.min():.3f}..{norms.max():.3f}, expected unit vectors"
        )
    return vectors


def mean_cosine(a: npt.NDArray[np.float32], b: npt.NDArray[np.float32]) -> float:
    """Mean row-wise cosine similarity of two equally shaped matrices."""
    norms = np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1)
    return float(np.mean((a * b).sum(axis=1) / np.maximum(norms, 1e-12)))


def check_agreement(cosine: float) -> None:
    """Refuse an int8 model that strays too far from its float32 source."""
    if not np.isfinite(cosine) or cosine < MIN_MEAN_COSINE:
        raise ModelBuildFailed(
            f"int8 model agrees poorly with float32 (mean cosine {cosine:.4f} < "
            f"{MIN_MEAN_COSINE}); the quantiser or onnxruntime version may be at fault"
        )
    log.info("int8 model mean cosine to float32 on probe texts: %.4f", cosine)
