"""How the Embedder cuts texts into onnxruntime runs: one padded width a run, within a budget of padded tokens.

A text's padded width depends on its own length only, so the same text gives bit-identical
vectors whatever else is embedded with it (embedder.py says why).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

# Padded tokens per onnxruntime run. onnxruntime's arena keeps its peak activation memory
# (attention grows with batch x window^2) for as long as the session lives: one 8192-token run
# grows RSS by ~470 MB, a 2048-token run by ~120 MB. Two full windows per run cost no more CPU
# per text than eight on the int8 model (600 mixed texts, twice: 20.4/22.9 CPU s at 512 tokens,
# 26.1/23.7 at 2048) and hold 65 MiB less (docs/benchmarks.md, "Semantic index", Memory).
DEFAULT_TOKEN_BUDGET = 512
# Caps the batch for very short texts too, bounding one run's latency and memory.
MAX_BATCH = 256
# Padded widths are multiples of this (or the window): at most this many wasted tokens a text.
PAD_MULTIPLE = 16


def plan_batches(lengths: Sequence[int], token_budget: int, max_batch: int = MAX_BATCH) -> list[range]:
    """Cut positions of a longest-first width list into batches of one width whose padded size fits."""
    batches: list[range] = []
    start = 0
    while start < len(lengths):
        longest = max(int(lengths[start]), 1)
        size = max(1, min(max_batch, token_budget // longest))
        stop = start + 1
        while stop < min(len(lengths), start + size) and lengths[stop] == lengths[start]:
            stop += 1
        batches.append(range(start, stop))
        start = stop
    return batches


def padded_widths(lengths: npt.NDArray[np.int64], window: int) -> npt.NDArray[np.int64]:
    """Each text's padded width: its length rounded up to PAD_MULTIPLE, at most the window."""
    rounded = -(-lengths // PAD_MULTIPLE) * PAD_MULTIPLE
    widths: npt.NDArray[np.int64] = np.maximum(np.minimum(rounded, max(window, 1)), lengths)
    return widths
