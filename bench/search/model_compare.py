"""Another packaged embedding model on the benchmark set, offline, without re-indexing through a daemon.

For each project (or CoSQA) the index a daemon built for MiniLM is copied, every chunk
text of it is embedded with the other model (its passage prefix applied), the vectors go
into a fresh hnswlib index in memory, and quality.py's strategies run with that model
embedding the queries (its query prefix applied). Chunking and the keyword side are the
index's own, so the comparison isolates the model. `--cost` times both models on the
same chunk texts, interleaved, for the cost per chunk.

    python -m bench.search.model_compare requests cosqa --cosqa /path/to/cosqa-data
    python -m bench.search.model_compare --cost requests

Output: bench/out/search/quality-<model>-<project>.json and one line per project.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from pathlib import Path
from typing import Any

from bench.runner import arg_parser
from bench.search.corpus import OUT_DIR
from bench.search.cosqa import open_cosqa_bench
from bench.search.crossval import STRENGTH_GRID
from bench.search.quality import SHIPPED, Bench, _MemoVectors, measure, open_bench, stage1_ranks
from bench.search.ranking import score

__all__ = ["swap_model"]

_COPIES = OUT_DIR / "model-copies"
# Fusion settings also measured with the other model (the shipped one is in `quality`).
_SETTINGS = ("convex v1:k0.3 cov1 str0", "convex v1:k0.3 cov1 str40", "convex v1:k0.5 cov1 str40")


def _copy_index(name: str, label: str) -> None:
    """Copy a project's index under the label `<label>-copy`, so the original stays untouched."""
    record = json.loads((OUT_DIR / f"index-{name}{'-' + label if label else ''}.json").read_text())
    copy = _COPIES / name
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(record["store_dir"], copy)
    record["store_dir"] = str(copy)
    (OUT_DIR / f"index-{name}-{label}-copy.json").write_text(json.dumps(record))


def swap_model(bench: Bench, model: str) -> tuple[int, float]:
    """Re-embed the bench's chunks with `model` and make it the bench's embedder; (chunks, seconds)."""
    from lensmux.graph.embedding.embedder import Embedder
    from lensmux.graph.index import HnswParams, VectorIndex

    store = bench.offline.store
    pairs = store.chunk_texts(sorted(store.chunk_ids()))
    embedder = Embedder.open_default(model=model)
    started = time.perf_counter()
    matrix = embedder.embed([text for _, text in pairs])
    seconds = time.perf_counter() - started
    vectors = VectorIndex(matrix.shape[1], HnswParams())
    vectors.add([chunk_id for chunk_id, _ in pairs], matrix)
    # The bench owns its offline index: swap its vectors in place.
    bench.offline._files.vectors = vectors
    bench.vectors = _MemoVectors(vectors)
    raw_query = embedder.embed_query
    memo: dict[str, Any] = {}

    def cached(text: str) -> Any:
        if text not in memo:
            memo[text] = raw_query(text)
        return memo[text]

    embedder.embed_query = cached  # type: ignore[method-assign]
    bench.offline.embedder = embedder
    return len(pairs), seconds


def _cost(name: str, label: str, model: str, count: int = 400) -> dict[str, Any]:
    """CPU ms per chunk and chunks/s of the default model and `model` on the same texts, interleaved."""
    import sqlite3

    from lensmux.graph.embedding.embedder import Embedder
    from lensmux.graph.index.sqlite.chunk_text import unpack

    record = json.loads((OUT_DIR / f"index-{name}{'-' + label if label else ''}.json").read_text())
    with sqlite3.connect(f"file:{record['store_dir']}/index.sqlite?mode=ro", uri=True) as conn:
        texts = [unpack(row[0]) for row in conn.execute("SELECT text FROM chunks ORDER BY id LIMIT ?", (count,))]
    models = {"all-MiniLM-L6-v2": Embedder.open_default(), model: Embedder.open_default(model=model)}
    runs: dict[str, list[dict[str, float]]] = {m: [] for m in models}
    for _ in range(2):
        for m, embedder in models.items():
            cpu0, wall0 = os.times(), time.perf_counter()
            embedder.embed(texts)
            cpu1, wall = os.times(), time.perf_counter() - wall0
            cpu = (cpu1.user - cpu0.user) + (cpu1.system - cpu0.system)
            runs[m].append(
                {"chunks_per_s": round(len(texts) / wall, 1), "cpu_ms_per_chunk": round(cpu * 1000 / len(texts), 1)}
            )
    tokens = {m: sum(e.count_tokens_batch(texts)) for m, e in models.items()}
    return {"project": name, "chunks": len(texts), "tokens": tokens, "runs": runs}


def main(argv: list[str] | None = None) -> int:
    """Measure the named projects with another model."""
    parser = arg_parser(__doc__)
    parser.add_argument("projects", nargs="+", help="benchmark projects, or cosqa (needs --cosqa)")
    parser.add_argument("--model", default="multilingual-e5-small")
    parser.add_argument("--index-label", default="words", help="the MiniLM indexes to start from")
    parser.add_argument("--cosqa", type=Path, metavar="DIR", help="the two CoSQA files")
    parser.add_argument("--cost", action="store_true", help="time both models on one project's chunks instead")
    args = parser.parse_args(argv)
    if args.cost:
        print(json.dumps(_cost(args.projects[0], args.index_label, args.model)))
        return 0
    for name in args.projects:
        _copy_index(name, args.index_label)
        copy_label = f"{args.index_label}-copy"
        if name == "cosqa":
            if args.cosqa is None:
                raise SystemExit("bench.search.model_compare: cosqa needs --cosqa DIR")
            bench = open_cosqa_bench(args.cosqa, copy_label)
        else:
            bench = open_bench(name, None, None, copy_label)
        try:
            chunks, seconds = swap_model(bench, args.model)
            quality = measure(bench, SHIPPED)
            settings = {label: score(stage1_ranks(bench, STRENGTH_GRID[label])) for label in _SETTINGS}
        finally:
            bench.close()
        result = {"project": name, "model": args.model, "chunks": chunks, "embed_s": round(seconds, 1)}
        result |= {"quality": quality, "settings": settings}
        (OUT_DIR / f"quality-{args.model}-{name}.json").write_text(json.dumps(result, indent=1))
        print(
            json.dumps(
                {"project": name, "chunks_per_s": round(chunks / seconds, 1)}
                | {k: v["mrr@10"] for k, v in (quality | settings).items()}
            ),
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
