"""What a write pays to keep the index's counts, by the size of the index (issue 23, item 4).

    python -m bench.index.counts                      # a run of 2k, 20k and 100k files
    python -m bench.index.counts --sizes 5000 50000

Each size is a full run into one real Store (graph/index/sqlite/store.py, on disk, WAL):
files of 10 symbols and 10 chunks each, written in transactions of 64 files as the
pipeline's writer does. *now* is the store's write_files, which keeps the counts from the
rows it adds and deletes; *before* is what every write added until issue 23, the three
count(*) over files, symbols and chunks (`_recount_before`), timed on the same connection
right after each write. The figures are the median of the last 20 writes at each size
and the sum over the whole run: the recount grows with the index, so a run paid for it
quadratically.
"""

from __future__ import annotations

import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench import OUT_DIR as BENCH_OUT
from bench.runner import add_common_options, arg_parser, finish, result_header, run_and_save
from lensmux.graph.index.builder.preparing.chunking import ChunkDraft
from lensmux.graph.index.builder.preparing.document_symbols import LspRange, ParsedSymbol
from lensmux.graph.index.records import FileWrite
from lensmux.graph.index.sqlite.store import Store

PER_FILE = 10
BATCH = 64


def _recount_before(conn: sqlite3.Connection) -> None:
    """The baseline: the counts as every write refreshed them before issue 23."""
    conn.execute("BEGIN IMMEDIATE")
    for key, table in (("count_files", "files"), ("count_symbols", "symbols"), ("count_chunks", "chunks")):
        conn.execute(f"UPDATE meta SET value = (SELECT count(*) FROM {table}) WHERE key = ?", (key,))
    conn.execute("COMMIT")


def _file(n: int) -> FileWrite:
    path = f"pkg/sub_{n % 97}/mod_{n}.py"
    symbols = [
        ParsedSymbol(
            name=f"function_{n}_{i}",
            qualified_name=f"function_{n}_{i}",
            kind="function",
            detail=None,
            range=LspRange(i * 5, 0, i * 5 + 4, 0),
            selection_range=LspRange(i * 5, 4, i * 5, 10),
            container=None,
            parent=None,
            depth=0,
        )
        for i in range(PER_FILE)
    ]
    chunks = [
        ChunkDraft(
            kind="function",
            name=f"function_{n}_{i}",
            symbol=i,
            start_line=i * 5,
            end_line=i * 5 + 4,
            text=f"{path}: function_{n}_{i}\nfunction {n} {i}\ndef function_{n}_{i}(value):\n    return value + {i}\n",
        )
        for i in range(PER_FILE)
    ]
    return FileWrite(path, "python", f"{n:064x}", n, 100, "lsp", symbols, chunks, [20] * PER_FILE, frozenset())


def _measure(files: int) -> dict[str, Any]:
    now: list[float] = []
    before: list[float] = []
    with tempfile.TemporaryDirectory(prefix="lensmux-counts-") as tmp:
        root = Path(tmp) / "repo"
        root.mkdir()
        store = Store.open(Path(tmp) / "state", root, model_id="bench", dim=4)
        try:
            for start in range(0, files, BATCH):
                batch = [_file(n) for n in range(start, min(files, start + BATCH))]
                started = time.perf_counter()
                store.write_files(batch)
                now.append(time.perf_counter() - started)
                started = time.perf_counter()
                _recount_before(store._writer)  # the baseline runs on the store's own connection
                before.append(time.perf_counter() - started)
            counts = store.counts()
        finally:
            store.close()
    if counts.files != files or counts.chunks != files * PER_FILE:
        raise AssertionError(f"counts {counts} after writing {files} files")
    tail = slice(-20, None)
    return {
        "files": files,
        "chunks": files * PER_FILE,
        "writes": len(now),
        "write_ms_last": round(statistics.median(now[tail]) * 1000, 2),
        "recount_ms_last": round(statistics.median(before[tail]) * 1000, 2),
        "run_writes_s": round(sum(now), 2),
        "run_recounts_s": round(sum(before), 2),
    }


def run(args: Any) -> dict[str, Any]:
    """One full run per size."""
    started = time.monotonic()
    result = result_header("bench.index.counts")
    result["sizes"] = [_measure(size) for size in args.sizes]
    return finish(result, started)


def render(result: dict[str, Any]) -> str:
    """The table for docs/benchmarks.md."""
    lines = [
        "| files (chunks) | a write now, ms (last 20) | the old recount a write added, ms (last 20) "
        "| whole run: writes now, s | whole run: the recounts added, s |",
        "| ---: | ---: | ---: | ---: | ---: |",
    ]
    for s in result["sizes"]:
        lines.append(
            f"| {s['files']:,} ({s['chunks']:,}) | {s['write_ms_last']} | {s['recount_ms_last']} "
            f"| {s['run_writes_s']} | {s['run_recounts_s']} |"
        )
    load = result["machine"]
    start, end = (", ".join(map(str, load[k])) for k in ("load_avg_at_start", "load_avg_at_end"))
    return "\n".join(lines) + (
        f"\n\n{BATCH} files of {PER_FILE} symbols and chunks per write; `{result['command']}`; "
        f"load average at the start {start}, at the end {end}\n"
    )


def main() -> int:
    """`python -m bench.index.counts`."""
    parser = arg_parser(__doc__)
    parser.add_argument("--sizes", type=int, nargs="+", default=[2_000, 20_000, 100_000], help="files per run")
    add_common_options(parser, BENCH_OUT / "index")
    return run_and_save(parser.parse_args(), "counts", run, render, (sqlite3.Error,))


if __name__ == "__main__":
    sys.exit(main())
