"""Build the query adapter: embed the mined pairs with the frozen model, fit, write the shipped file.

Steps: the pairs of adapter_pairs.py (mined first if there are none); both sides embedded
by the int8 all-MiniLM-L6-v2 lensmux builds (the vectors cached under
bench/out/search/adapter/, keyed by the pairs file and the model id, since embedding
is the slow part); graph.embedding.query.adapter_training.fit on the training split, the
validation split choosing the epoch; the factors written as float32 [2, dim, rank]
in the adapter file format (query_adapter.encode: a JSON header with the model, width
and checksum, then the .npy). Everything after embedding is seeded numpy in float64, so
a second run gives the same bytes (the record's sha256 says which).

    python -m bench.search.adapter_build            # fit with the shipped settings, print, write nothing
    python -m bench.search.adapter_build --write    # ... and write graph/embedding/query/<model>.adapter
    python -m bench.search.adapter_build --rank 64 --epochs 12 --label r64

Output: bench/out/search/adapter/fit[-<label>].json (settings, history, validation MRR before/after).
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from bench.runner import arg_parser
from bench.search.adapter_pairs import ADAPTER_DIR, Pair, read_pairs
from lensmux.graph.embedding.query.adapter_training import TrainConfig, apply_factors, fit, mrr
from lensmux.graph.embedding.query.query_adapter import adapter_path, encode

__all__ = ["embedded_pairs"]

Vectors = npt.NDArray[np.float32]


def embedded_pairs(pairs_file: Path = ADAPTER_DIR / "pairs.jsonl") -> tuple[list[Pair], Vectors, Vectors, str]:
    """The pairs, their query and code vectors (row-aligned), and the model id they were embedded with."""
    from bench.search.offline import model_id
    from lensmux.graph.embedding.embedder import Embedder

    if not pairs_file.is_file():
        from bench.search import adapter_pairs

        adapter_pairs.main([])
    pairs = read_pairs(pairs_file)
    digest = hashlib.sha256(pairs_file.read_bytes()).hexdigest()[:16]
    embedder = Embedder.open_default()
    model = model_id(embedder)
    cache = ADAPTER_DIR / f"vectors-{digest}-{hashlib.sha1(model.encode()).hexdigest()[:8]}.npz"
    if cache.is_file():
        saved = np.load(cache)
        return pairs, saved["queries"], saved["codes"], model
    started = time.monotonic()
    queries = embedder.embed_queries([p.query for p in pairs])
    codes = np.empty((len(pairs), embedder.dim), dtype=np.float32)
    step = 512
    for start in range(0, len(pairs), step):
        codes[start : start + step] = embedder.embed([p.code for p in pairs[start : start + step]])
        print(
            f"embedded {min(start + step, len(pairs))}/{len(pairs)} chunks, {time.monotonic() - started:.0f}s",
            flush=True,
        )
    np.savez(cache, queries=queries, codes=codes)
    return pairs, queries, codes, model


def main(argv: list[str] | None = None) -> int:
    """Embed, fit, report, and write the file with --write."""
    parser = arg_parser(__doc__)
    defaults = TrainConfig()
    for name, value in dataclasses.asdict(defaults).items():
        flag = f"--{name.replace('_', '-')}"
        if isinstance(value, bool):
            parser.add_argument(flag, action=argparse.BooleanOptionalAction, default=value)
        else:
            parser.add_argument(flag, type=type(value), default=value)
    parser.add_argument("--label", default="")
    parser.add_argument("--write", action="store_true", help="write the shipped adapter file")
    args = parser.parse_args(argv)
    config = TrainConfig(**{name: getattr(args, name) for name in dataclasses.asdict(defaults)})
    pairs, queries, codes, model = embedded_pairs()
    train = np.array([p.split == "train" for p in pairs])
    validation = (queries[~train], codes[~train])
    started = time.perf_counter()
    package_ids = {name: i for i, name in enumerate(sorted({(p.source, p.package) for p in pairs}))}
    groups = np.array([package_ids[(p.source, p.package)] for p in pairs], dtype=np.int64)
    fitted = fit(queries[train], codes[train], config, validation, groups[train])
    seconds = time.perf_counter() - started
    factors = fitted.factors()
    adapted = apply_factors(validation[0], factors[0], factors[1])
    record: dict[str, Any] = {
        "model": model,
        "config": dataclasses.asdict(config),
        "pairs": {"train": int(train.sum()), "validation": int((~train).sum())},
        "fit_seconds": round(seconds, 1),
        "epoch_kept": fitted.epoch,
        "history": fitted.history,
        "validation": {
            "mrr_before": round(mrr(*validation), 4),
            "mrr_after": round(mrr(adapted, validation[1]), 4),
            "mrr@10_before": round(mrr(*validation, cutoff=10), 4),
            "mrr@10_after": round(mrr(adapted, validation[1], cutoff=10), 4),
            # Each validation package's queries ranked among that package's code only (as a
            # search within one project ranks), averaged over the packages with 20 pairs or more.
            "within_package_mrr@10_before": _within(groups[~train], *validation),
            "within_package_mrr@10_after": _within(groups[~train], adapted, validation[1]),
        },
    }
    data = encode(factors, model.split()[0])
    record |= {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    if args.write:
        target = adapter_path(model.split()[0])
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        record["written"] = str(target)
    suffix = f"-{args.label}" if args.label else ""
    (ADAPTER_DIR / f"fit{suffix}.json").write_text(json.dumps(record, indent=1))
    print(json.dumps(record, indent=1))
    return 0


def _within(groups: npt.NDArray[np.int64], queries: npt.NDArray[np.floating], codes: npt.NDArray[np.floating]) -> float:
    scores = [
        mrr(queries[groups == g], codes[groups == g], cutoff=10)
        for g in np.unique(groups)
        if int((groups == g).sum()) >= 20
    ]
    return round(float(np.mean(scores)), 4) if scores else float("nan")


if __name__ == "__main__":
    sys.exit(main())
