"""What one process holds after embedding an index's chunks, under each onnxruntime and malloc setting.

    python -m bench.index.embed_memory TEXTS.json              # every variant, one process each
    python -m bench.index.embed_memory TEXTS.json --variants current,before

TEXTS.json is a JSON list of chunk texts (for example every `text` of the
`chunks` table of an index that `bench.index.memory_release` built). Each
variant runs in a fresh process: open the packaged int8 model, embed the texts
in calls of 256 from a pool of worker threads (as the indexer does), then read
RSS, RSS after `malloc_trim(0)`, the peak, the CPU time, and a sha256 of every
vector (equal hashes: bit-identical vectors).
"""

from __future__ import annotations

import ctypes
import hashlib
import json
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from bench.runner import add_common_options, arg_parser, start_logging

VARIANTS = {
    "current": "the code as it is: arena shrunk after each call's last run, mmap threshold fixed",
    "before": "arena kept at its peak, glibc's dynamic mmap threshold",
    "shrink-every-run": "arena shrunk after every run, mmap threshold fixed",
    "shrink-no-threshold": "arena shrunk after each call, glibc's dynamic mmap threshold",
    "no-arena": "enable_cpu_mem_arena off, glibc's dynamic mmap threshold",
    "no-arena-threshold": "enable_cpu_mem_arena off, mmap threshold fixed",
    "no-mem-pattern": "before, with enable_mem_pattern off",
    "trim-every-call": "before, with malloc_trim(0) after every call",
}
_BATCH = 256


def _status(field: str) -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return round(int(line.split()[1]) / 1024, 1)
    return 0.0


def _patch(variant: str) -> None:
    """Change the embedder's onnxruntime and malloc settings for one variant."""
    import onnxruntime as ort

    from lensmux.graph.embedding import embedder
    from lensmux.graph.embedding.inference import heap, runtime

    if variant in ("before", "shrink-no-threshold", "no-arena", "no-mem-pattern", "trim-every-call"):
        heap.keep_large_blocks_mapped = lambda: False
    opened = runtime.open_session

    def open_session(model: bytes, *, threads: int, origin: str) -> ort.InferenceSession:
        session = opened(model, threads=threads, origin=origin)
        if variant not in ("no-arena", "no-arena-threshold", "no-mem-pattern"):
            return session
        options = session.get_session_options()
        options.enable_cpu_mem_arena = not variant.startswith("no-arena")
        options.enable_mem_pattern = variant != "no-mem-pattern"
        return ort.InferenceSession(model, sess_options=options, providers=runtime.PROVIDERS)

    ran = runtime.run_session

    def run_session(session: Any, io: Any, batch: Any, *, last: bool = False) -> npt.NDArray[np.float32]:
        if variant in ("before", "no-arena", "no-arena-threshold", "no-mem-pattern", "trim-every-call"):
            last = False
        elif variant == "shrink-every-run":
            last = True
        return ran(session, io, batch, last=last)

    # The embedder module looks both names up at call time.
    setattr(embedder, "open_session", open_session)  # noqa: B010
    setattr(embedder, "run_session", run_session)  # noqa: B010


def measure(variant: str, texts: list[str]) -> dict[str, Any]:
    """Embed `texts` under `variant` in this process; its memory, CPU and vector hash."""
    libc = ctypes.CDLL("libc.so.6")
    _patch(variant)
    from lensmux.graph.embedding.embedder import Embedder

    start = _status("VmRSS")
    model = Embedder.open_default("int8")
    loaded = _status("VmRSS")
    cpu = time.process_time()
    digest = hashlib.sha256()
    with ThreadPoolExecutor(max_workers=4) as pool:
        for first in range(0, len(texts), _BATCH):
            digest.update(pool.submit(model.embed, texts[first : first + _BATCH]).result().tobytes())
            if variant == "trim-every-call":
                libc.malloc_trim(0)
    cpu = time.process_time() - cpu
    after = _status("VmRSS")
    libc.malloc_trim(0)
    return {
        "variant": variant,
        "start_mib": start,
        "model_mib": loaded,
        "after_mib": after,
        "after_trim_mib": _status("VmRSS"),
        "peak_mib": _status("VmHWM"),
        "cpu_s": round(cpu, 1),
        "vectors_sha256": digest.hexdigest()[:16],
    }


def main(argv: list[str] | None = None) -> int:
    """Run each variant in its own process and print a table."""
    parser = arg_parser(__doc__)
    parser.add_argument("texts", type=Path)
    parser.add_argument("--variants", default=",".join(VARIANTS), help=", ".join(VARIANTS))
    parser.add_argument("--one", help=argparse_hidden())
    add_common_options(parser)
    args = parser.parse_args(argv)
    texts = json.loads(args.texts.read_text())
    if args.one:
        print(json.dumps(measure(args.one, texts)))
        return 0
    start_logging(args.verbose)
    lines = [
        f"{len(texts):,} texts, calls of {_BATCH}",
        "",
        "| variant | RSS after MiB | after trim MiB | peak MiB | CPU s | vectors |",
        "| --- | ---: | ---: | ---: | ---: | --- |",
    ]
    for variant in args.variants.split(","):
        argv_one = [sys.executable, "-m", "bench.index.embed_memory", str(args.texts), "--one", variant]
        done = subprocess.run(argv_one, capture_output=True, text=True, check=True)
        r = json.loads(done.stdout.strip().splitlines()[-1])
        lines.append(
            f"| {variant} | {r['after_mib']} | {r['after_trim_mib']} | {r['peak_mib']} | {r['cpu_s']} "
            f"| {r['vectors_sha256']} |"
        )
        print(lines[-1], flush=True)
    print("\n".join(lines))
    return 0


def argparse_hidden() -> str:
    """argparse's marker for an option left out of --help."""
    import argparse

    return argparse.SUPPRESS


if __name__ == "__main__":
    sys.exit(main())
