"""(a) The ceiling: raw onnxruntime throughput of lensmux's int8 model on a repository's chunks.

The chunks are read back from a finished index's SQLite, so they are exactly
what lensmux embeds (pyright's symbols, lensmux's chunking). They are embedded
with a bare `onnxruntime.InferenceSession` on the same cached model file and a
bare `tokenizers.Tokenizer` from the same tokenizer.json, bypassing lensmux's
Embedder: one batched tokenisation of everything, texts sorted by length,
each batch padded only to its longest member. A short sweep over batch sizes
and thread spinning on a sample picks the best settings (`sweep`), which then
embed every chunk (`measure`, one full pass; the runner interleaves passes
with the daemon's runs so both see the same machine load).
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import onnxruntime as ort
from tokenizers import Tokenizer

from lensmux.graph.embedding.model.store import ensure_model
from lensmux.graph.index.sqlite.chunk_text import unpack

Vectors = npt.NDArray[np.float32]
BATCH_SIZES = (8, 16, 32, 64)


def load_chunks(database: Path) -> list[str]:
    """Every chunk text of a finished index, in chunk id order."""
    conn = sqlite3.connect(f"file:{database}?mode=ro", uri=True)
    try:
        # Stored packed since schema 2 (graph/index/sqlite/chunk_text.py).
        return [unpack(row[0]) for row in conn.execute("SELECT text FROM chunks ORDER BY id")]
    finally:
        conn.close()


@dataclass
class RawModel:
    """A bare session and tokenizer on lensmux's cached model files."""

    session: ort.InferenceSession
    tokenizer: Tokenizer
    output: str
    model_file: str

    @classmethod
    def open(cls, *, threads: int, spinning: bool) -> RawModel:
        """Session with `threads` intra-op threads; `spinning` is onnxruntime's own default (on)."""
        cached = ensure_model("int8")
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.log_severity_level = 3
        options.add_session_config_entry("session.intra_op.allow_spinning", "1" if spinning else "0")
        session = ort.InferenceSession(cached.model_bytes, sess_options=options, providers=["CPUExecutionProvider"])
        tokenizer = Tokenizer.from_str(cached.tokenizer_json)
        tokenizer.no_padding()
        tokenizer.enable_truncation(max_length=cached.spec.max_tokens)
        output = cached.spec.output or session.get_outputs()[0].name
        return cls(session, tokenizer, output, str(cached.directory / cached.spec.model_file))

    def embed(self, texts: Sequence[str], batch_size: int) -> tuple[Vectors, int]:
        """Vectors of `texts` in their order, and the padded tokens the encoder ran on."""
        encodings = self.tokenizer.encode_batch(list(texts), add_special_tokens=True)
        ids = [e.ids for e in encodings]
        order = sorted(range(len(ids)), key=lambda i: -len(ids[i]))
        result = np.empty((len(texts), 0), dtype=np.float32)
        padded = 0
        for start in range(0, len(order), batch_size):
            rows = order[start : start + batch_size]
            width = len(ids[rows[0]])
            input_ids = np.zeros((len(rows), width), dtype=np.int64)
            mask = np.zeros((len(rows), width), dtype=np.int64)
            for r, row in enumerate(rows):
                input_ids[r, : len(ids[row])] = ids[row]
                mask[r, : len(ids[row])] = 1
            (out,) = self.session.run([self.output], {"input_ids": input_ids, "attention_mask": mask})
            vectors = np.asarray(out, dtype=np.float32)
            if result.shape[1] == 0:
                result = np.empty((len(texts), vectors.shape[1]), dtype=np.float32)
            result[rows] = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
            padded += input_ids.size
        return result, padded


@dataclass(frozen=True)
class Pass:
    """One timed embedding of a list of texts."""

    seconds: float
    cpu_s: float
    vectors: Vectors
    padded: int


def _timed(model: RawModel, texts: Sequence[str], batch_size: int) -> Pass:
    # CPU time of the whole process (every onnxruntime thread): on a shared machine it
    # moves far less than wall time when other work competes for the cores.
    cpu, started = time.process_time(), time.perf_counter()
    vectors, padded = model.embed(texts, batch_size)
    return Pass(time.perf_counter() - started, time.process_time() - cpu, vectors, padded)


def _sample(texts: Sequence[str], size: int) -> list[str]:
    # Every k-th chunk in id order: the sample has the corpus's mix of lengths.
    step = max(1, len(texts) // size)
    return list(texts[::step][:size])


@dataclass(frozen=True)
class Settings:
    """What the sweep chose."""

    threads: int
    batch: int
    spinning: bool
    sweep: list[dict[str, Any]]


def sweep(texts: Sequence[str], *, threads: int | None = None, sample: int = 160) -> Settings:
    """Try batch sizes with and without thread spinning on a sample; keep the fastest (wall)."""
    threads = threads or len(os.sched_getaffinity(0))
    subset = _sample(texts, sample)
    tried: list[dict[str, Any]] = []
    best: tuple[float, int, bool] | None = None
    for spinning in (False, True):
        model = RawModel.open(threads=threads, spinning=spinning)
        model.embed(subset[:16], 16)  # first run allocates and plans; not measured
        for batch in BATCH_SIZES:
            timed = _timed(model, subset, batch)
            rate = len(subset) / timed.seconds
            tried.append(
                {
                    "spinning": spinning,
                    "batch": batch,
                    "chunks": len(subset),
                    "chunks_per_s": round(rate, 2),
                    "chunks_per_cpu_s": round(len(subset) / timed.cpu_s, 2),
                }
            )
            if best is None or rate > best[0]:
                best = (rate, batch, spinning)
    assert best is not None
    return Settings(threads, best[1], best[2], tried)


def measure(texts: Sequence[str], settings: Settings) -> tuple[dict[str, Any], Vectors]:
    """One full pass over every chunk with the chosen settings: figures, and the vectors."""
    model = RawModel.open(threads=settings.threads, spinning=settings.spinning)
    model.embed(texts[:16], 16)
    timed = _timed(model, texts, settings.batch)
    tokens = sum(len(e.ids) for e in model.tokenizer.encode_batch(list(texts), add_special_tokens=True))
    figures = {
        "chunks": len(texts),
        "tokens": tokens,
        "padded_tokens": timed.padded,
        "threads": settings.threads,
        "batch": settings.batch,
        "spinning": settings.spinning,
        "seconds": round(timed.seconds, 3),
        "cpu_s": round(timed.cpu_s, 3),
        "chunks_per_s": round(len(texts) / timed.seconds, 2),
        "chunks_per_cpu_s": round(len(texts) / timed.cpu_s, 2),
        "tokens_per_s": round(tokens / timed.seconds, 1),
        "model_file": model.model_file,
        "onnxruntime": ort.__version__,
    }
    return figures, timed.vectors
