"""Dynamic int8 quantisation of the float32 encoder, gated on agreement with it.

Weights are int8 per output channel: per-tensor scales cost far more accuracy here
(mean cosine to fp32 ~0.96 instead of ~0.99 on code and prose). Activations are
quantised per batch at run time (uint8, onnxruntime's only dynamic choice); with
MatMulConstBOnly only the weight GEMMs become MatMulInteger while the attention
products stay float. The word-embedding Gather is quantised too: it shrinks the file
from ~58 MB to ~23 MB at no measurable cost. onnxruntime's CPU provider runs the
per-channel MatMulInteger as is (fused to DynamicQuantizeMatMul); no extra options needed.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import numpy.typing as npt

from lensmux.graph.embedding.runtime import (
    ORT_ERRORS,
    SessionIO,
    available_cores,
    open_session,
    run_session,
)
from lensmux.graph.embedding.spec import EmbeddingError, ModelBuildFailed
from lensmux.graph.embedding.tokenizer import TextTokenizer

log = logging.getLogger(__name__)

QUANTIZATION = {
    "method": "onnxruntime.quantization.quantize_dynamic",
    "weight_type": "QInt8",
    "per_channel": "true",
    "reduce_range": "false",
    "activations": "dynamic QUInt8",
}
# Below this the int8 model is refused: a correct build measures ~0.99.
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

# The quantiser signals unsupported graphs with asserts and KeyErrors as well.
_QUANTIZE_ERRORS: tuple[type[BaseException], ...] = (*ORT_ERRORS, OSError, KeyError, AssertionError)
_PREPROCESS_HINT = "Please consider to run pre-processing before quantization"


class _QuietQuantizer(logging.Filter):
    """Keeps the quantiser's per-tensor chatter out of the daemon log.

    The quantiser logs straight on the root logger: a filter there sees only such direct
    root records (lensmux logs through named loggers), so warnings still pass, minus the
    generic pre-processing advice that does not apply to this graph.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno < logging.WARNING:
            return False
        return not str(record.msg).startswith(_PREPROCESS_HINT)


@contextmanager
def _quiet_quantizer() -> Iterator[None]:
    root = logging.getLogger()
    quiet = _QuietQuantizer()
    root.addFilter(quiet)
    try:
        yield
    finally:
        root.removeFilter(quiet)


def quantize_int8(fp32_path: Path, int8_path: Path) -> None:
    """Write the per-channel dynamic int8 version of ``fp32_path`` to ``int8_path``."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    try:
        with _quiet_quantizer():
            quantize_dynamic(
                fp32_path,
                int8_path,
                per_channel=True,
                reduce_range=False,
                weight_type=QuantType.QInt8,
            )
    except _QUANTIZE_ERRORS as exc:
        raise ModelBuildFailed(f"int8 quantisation of {fp32_path.name} failed: {exc}") from exc


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
