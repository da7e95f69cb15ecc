"""The onnxruntime boundary: session creation, input feeding, and error translation."""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import onnxruntime as ort
from onnxruntime.capi import onnxruntime_pybind11_state as _ort_state

from lensmux.graph.embedding.inference import heap
from lensmux.graph.embedding.inference.tokenizer import TokenBatch
from lensmux.graph.embedding.spec import InferenceFailed, ModelCorrupt, ModelSpecInvalid

log = logging.getLogger(__name__)

PROVIDERS = ["CPUExecutionProvider"]
_ERROR_NAMES = (
    "Fail", "InvalidArgument", "NoSuchFile", "NoModel", "EngineError", "RuntimeException",
    "InvalidProtobuf", "ModelLoaded", "NotImplemented", "InvalidGraph", "EPFail",
)  # fmt: skip
# onnxruntime's pybind errors derive from Exception directly, so they are listed by name.
ORT_ERRORS: tuple[type[BaseException], ...] = (
    *(getattr(_ort_state, name) for name in _ERROR_NAMES if hasattr(_ort_state, name)),
    RuntimeError,
    ValueError,
)
_INT_TYPES: dict[str, type[np.signedinteger[Any]]] = {
    "tensor(int64)": np.int64,
    "tensor(int32)": np.int32,
}
_KNOWN_INPUTS = {"input_ids", "attention_mask", "token_type_ids"}
# Sent with the last run of a call: the arena frees every region but its first afterwards,
# so the activations of the largest batch are not held until the next call (graph/embedding/inference/heap.py).
_SHRINK = ort.RunOptions()
_SHRINK.add_run_config_entry("memory.enable_memory_arena_shrinkage", "cpu:0")


def available_cores() -> int:
    """CPUs this process may run on (respects taskset and cgroup cpusets)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def open_session(model: bytes, *, threads: int, origin: str) -> ort.InferenceSession:
    """A CPU session for a serialized ONNX model; load failures are ``ModelCorrupt``."""
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    # Only errors: shape-merge notices from the optimiser would flood the daemon log.
    options.log_severity_level = 3
    # A daemon shares the machine with language servers: idle pool threads must sleep,
    # not spin waiting for the next batch.
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    # The arena's shrunk regions must leave the process, not stay in malloc's free lists.
    heap.keep_large_blocks_mapped()
    try:
        return ort.InferenceSession(model, sess_options=options, providers=PROVIDERS)
    except ORT_ERRORS as exc:
        raise ModelCorrupt(f"onnxruntime cannot load {origin}: {exc}") from exc


@dataclass(frozen=True)
class SessionIO:
    """How to feed one session: input element types and the output to read."""

    input_types: dict[str, type[np.signedinteger[Any]]]
    output: str

    @classmethod
    def inspect(cls, session: ort.InferenceSession, output: str | None, origin: str) -> SessionIO:
        """Check that the model takes only tokenizer inputs and pick its output."""
        input_types: dict[str, type[np.signedinteger[Any]]] = {}
        for arg in session.get_inputs():
            if arg.name not in _KNOWN_INPUTS or arg.type not in _INT_TYPES:
                raise ModelSpecInvalid(
                    f"{origin}: unsupported model input {arg.name} ({arg.type}); expected "
                    "int32/int64 input_ids, attention_mask and optionally token_type_ids"
                )
            input_types[arg.name] = _INT_TYPES[arg.type]
        if "input_ids" not in input_types:
            raise ModelSpecInvalid(f"{origin}: the model has no input_ids input")
        outputs = [o.name for o in session.get_outputs()]
        if output is None:
            output = "sentence_embedding" if "sentence_embedding" in outputs else outputs[0]
        elif output not in outputs:
            raise ModelSpecInvalid(f"{origin}: no output {output!r} (has {', '.join(outputs)})")
        return cls(input_types=input_types, output=output)

    def feed(self, batch: TokenBatch) -> dict[str, npt.NDArray[np.signedinteger[Any]]]:
        """The input dict for ``batch``; token types are all zero (single texts)."""
        arrays = {
            "input_ids": batch.input_ids,
            "attention_mask": batch.attention_mask,
            "token_type_ids": np.zeros_like(batch.input_ids),
        }
        return {name: arrays[name].astype(dtype, copy=False) for name, dtype in self.input_types.items()}


def run_session(
    session: ort.InferenceSession, io: SessionIO, batch: TokenBatch, *, last: bool = False
) -> npt.NDArray[np.float32]:
    """Run one batch and return the selected output as float32; `last` shrinks the arena afterwards."""
    try:
        (result,) = session.run([io.output], io.feed(batch), _SHRINK if last else None)
    except ORT_ERRORS as exc:
        raise InferenceFailed(
            f"onnxruntime failed on a batch of {batch.input_ids.shape[0]} x {batch.input_ids.shape[1]} tokens: {exc}"
        ) from exc
    return np.asarray(result, dtype=np.float32)


def pool(output: npt.NDArray[np.float32], mask: npt.NDArray[np.int64], mode: str) -> npt.NDArray[np.float32]:
    """Sentence vectors from a model output: 2-D passes through, 3-D is pooled over ``mask``."""
    if output.ndim == 2:
        return output
    if output.ndim != 3:
        raise InferenceFailed(f"model output has {output.ndim} dimensions, expected 2 or 3")
    if mode == "cls":
        return np.ascontiguousarray(output[:, 0, :])
    weights = mask[:, :, None].astype(np.float32)
    counts = np.maximum(weights.sum(axis=1), 1e-9)
    pooled: npt.NDArray[np.float32] = (output * weights).sum(axis=1) / counts
    return pooled


def l2_normalise(vectors: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    """Rows scaled to unit length (zero rows stay zero)."""
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    result: npt.NDArray[np.float32] = (vectors / np.maximum(norms, 1e-12)).astype(np.float32)
    return result
