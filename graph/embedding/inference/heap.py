"""What the embedding model's memory does after a run: arena shrunk, freed buffers unmapped, heap trimmed.

onnxruntime's CPU arena keeps the largest run's activations for the session's life
(docs/benchmarks.md, "Semantic index", Memory). `run_session` asks it to shrink
after the last run of each `Embedder.embed` call, but shrinking hands the buffers to
glibc's malloc, which keeps them: its mmap threshold rises (up to 32 MiB) after the
first large free, so later blocks of that size come from the heap and stay
resident. `keep_large_blocks_mapped` fixes the threshold so blocks of a MiB or more
are mmapped and go back to the system on free; `trim` returns what the heap can.
Both are no-ops where the C library is not glibc.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import logging
import threading

log = logging.getLogger(__name__)

# glibc's mallopt parameter number; a fixed value also switches off its dynamic adjustment.
_M_MMAP_THRESHOLD = -3
# Above every per-run Python object of the daemon's hot path, below onnxruntime's arena regions.
MMAP_THRESHOLD = 1 << 20

_lock = threading.Lock()
_threshold_set: list[bool] = []


@functools.cache
def _libc() -> ctypes.CDLL | None:
    """glibc, or None where the C library has no mallopt (musl, macOS)."""
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name) if name else None
    except OSError as exc:
        log.debug("C library unavailable: %s", exc)
        return None
    return libc if libc is not None and hasattr(libc, "mallopt") and hasattr(libc, "malloc_trim") else None


def keep_large_blocks_mapped() -> bool:
    """Blocks of MMAP_THRESHOLD bytes or more are mmapped, so freeing one unmaps it; once per process."""
    libc = _libc()
    if libc is None:
        return False
    with _lock:
        if not _threshold_set:
            _threshold_set.append(bool(libc.mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)))
        return _threshold_set[0]


def trim() -> None:
    """Give freed heap pages back to the system (glibc keeps them otherwise)."""
    libc = _libc()
    if libc is not None:
        libc.malloc_trim(0)
