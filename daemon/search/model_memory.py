"""The embedding model leaves memory when unused: released after an idle period, loaded on next use.

The ONNX session and the tokenizer are most of what the daemon holds for search
(docs/benchmarks.md, Memory). `Embedder.release_if_idle` drops them once nothing
has embedded or counted tokens for `[daemon.memory] model_release_after`
seconds; the next use loads them again from the model cache (about a second).
The task sleeps until the earliest moment the model could be due, never polls.
Indexing runs end with `trim_heap` too: their batches leave freed pages behind.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anyio
import anyio.to_thread

from lensmux.graph.embedding.inference import heap


async def release_task(embedder_of: Callable[[], Any], after: float, on_release: Callable[[], None]) -> None:
    """Release the model `after` seconds after its last use (never if `after` is 0)."""
    if after <= 0:
        return
    while True:
        embedder = embedder_of()
        loaded = embedder is not None and embedder.loaded
        # Unloaded (or not built yet): nothing can be due before a use plus `after`.
        wait = after - embedder.idle_seconds() if loaded else after
        await anyio.sleep(max(wait, 1.0))
        embedder = embedder_of()
        if embedder is not None and await anyio.to_thread.run_sync(embedder.release_if_idle, after):
            on_release()
            await anyio.to_thread.run_sync(trim_heap)


def trim_heap() -> None:
    """Give freed heap pages back to the system (glibc keeps them otherwise); a no-op elsewhere."""
    heap.trim()
