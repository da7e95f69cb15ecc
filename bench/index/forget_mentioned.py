"""What a file write pays to forget learned relations, by the size of the index (issue 23, item 4).

    python -m bench.index.forget_mentioned                      # 20k and 200k symbols
    python -m bench.index.forget_mentioned --sizes 5000 50000 500000

Each size is one index database (the index's own schema, WAL, on disk) of files with ten
symbols each, a third of them methods whose class is the file's class, every learnable
symbol learned: a root whose call graph the daemon has finished learning, the case where
the old query read the most. One *write* is `forget_mentioned` with the words of a batch
of 64 files (3,000 words, a tenth of them names of symbols in the index, a few class
names among them), in a transaction rolled back after it so every write sees the same
rows. The baseline is the implementation before issue 23, which read every learned row
on each write; both run in the same process on the same database, alternately, and the
figure is the ratio of their medians at each size.
"""

from __future__ import annotations

import random
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Collection
from pathlib import Path
from typing import Any

from bench import OUT_DIR as BENCH_OUT
from bench.runner import add_common_options, arg_parser, finish, result_header, run_and_save
from lensmux.graph.index.identifiers import called_without_name
from lensmux.graph.index.sqlite import learned
from lensmux.graph.index.sqlite.schema import DDL, LEARNED_DDL

SYMBOLS_PER_FILE = 10
WORDS_PER_WRITE = 3000
Forget = Callable[[sqlite3.Connection, Collection[str]], int]


def forget_mentioned_before(conn: sqlite3.Connection, words: Collection[str]) -> int:
    """The baseline: learned.forget_mentioned before issue 23 (every learned row read per write)."""
    if not words:
        return 0
    rows = conn.execute(
        "SELECT l.symbol_id, s.name, s.kind, p.name FROM learned l JOIN symbols s ON s.id = l.symbol_id"
        " LEFT JOIN symbols p ON p.id = s.parent_id"
    ).fetchall()
    gone = [
        (subject,)
        for subject, name, kind, parent in rows
        if name in words or (parent is not None and called_without_name(name, kind) and parent in words)
    ]
    conn.executemany("DELETE FROM learned WHERE symbol_id = ?", gone)
    return len(gone)


def _database(path: Path, symbols: int) -> sqlite3.Connection:
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA foreign_keys = ON")
    conn.executescript(DDL)
    conn.executescript(LEARNED_DDL)
    conn.execute("BEGIN")
    next_id = 1
    for f in range(symbols // SYMBOLS_PER_FILE):
        conn.execute(
            "INSERT INTO files(id, path, language, sha256, mtime_ns, size, structure, indexed_at)"
            " VALUES (?, ?, 'python', '', 0, 0, 'lsp', 0)",
            (f + 1, f"pkg/mod_{f}.py"),
        )
        cls = next_id
        for i in range(SYMBOLS_PER_FILE):
            if i == 0:
                name, kind, parent = f"Model{f}", "class", None
            elif i == 1:
                name, kind, parent = "__init__", "method", cls
            elif i < 4:
                name, kind, parent = f"method_{f}_{i}", "method", cls
            else:
                name, kind, parent = f"function_{f}_{i}", "function", None
            conn.execute(
                "INSERT INTO symbols(id, file_id, parent_id, name, qualified_name, kind, depth, start_line,"
                " start_char, end_line, end_char, sel_start_line, sel_start_char, sel_end_line, sel_end_char)"
                " VALUES (?, ?, ?, ?, ?, ?, 0, 0, 0, 0, 0, 0, 0, 0, 0)",
                (next_id, f + 1, parent, name, name, kind),
            )
            conn.execute("INSERT INTO learned(symbol_id, learned_at) VALUES (?, 0)", (next_id,))
            next_id += 1
    conn.execute("COMMIT")
    conn.execute("ANALYZE")
    return conn


def _words(rng: random.Random, symbols: int) -> frozenset[str]:
    """A batch's identifiers: names of indexed symbols (a few classes among them) and words that name none."""
    files = symbols // SYMBOLS_PER_FILE
    named = {f"function_{rng.randrange(files)}_{rng.randrange(4, SYMBOLS_PER_FILE)}" for _ in range(270)}
    named |= {f"Model{rng.randrange(files)}" for _ in range(30)}
    plain = {f"local_{i}" for i in range(WORDS_PER_WRITE - len(named))}
    return frozenset(named | plain | {"self", "int", "str", "return"})


def _time_write(conn: sqlite3.Connection, forget: Forget, words: frozenset[str]) -> tuple[float, int]:
    conn.execute("BEGIN IMMEDIATE")
    try:
        started = time.perf_counter()
        forgotten = forget(conn, words)
        took = time.perf_counter() - started
    finally:
        conn.execute("ROLLBACK")
    return took, forgotten


def _measure(symbols: int, writes: int, seed: int) -> dict[str, Any]:
    rng = random.Random(seed)
    with tempfile.TemporaryDirectory(prefix="lensmux-forget-") as tmp:
        conn = _database(Path(tmp) / "index.sqlite", symbols)
        try:
            times: dict[str, list[float]] = {"before": [], "now": []}
            for _ in range(writes):
                words = _words(rng, symbols)
                took_before, forgot_before = _time_write(conn, forget_mentioned_before, words)
                took_now, forgot_now = _time_write(conn, learned.forget_mentioned, words)
                if forgot_before != forgot_now:
                    raise AssertionError(f"{symbols} symbols: forgot {forgot_now}, before {forgot_before}")
                times["before"].append(took_before)
                times["now"].append(took_now)
        finally:
            conn.close()
    before, now = statistics.median(times["before"]), statistics.median(times["now"])
    return {
        "symbols": symbols,
        "learned": symbols,
        "writes": writes,
        "forgotten_per_write": forgot_now,
        "before_ms": round(before * 1000, 3),
        "now_ms": round(now * 1000, 3),
        "ratio": round(before / now, 1),
    }


def run(args: Any) -> dict[str, Any]:
    """Both implementations at each size."""
    started = time.monotonic()
    result = result_header("bench.index.forget_mentioned")
    result["sizes"] = [_measure(size, args.writes, seed=size) for size in args.sizes]
    return finish(result, started)


def render(result: dict[str, Any]) -> str:
    """The table for docs/benchmarks.md."""
    lines = [
        "| symbols (all learned) | before: every learned row, ms per write | now: the words' rows, ms per write "
        "| before / now |",
        "| ---: | ---: | ---: | ---: |",
    ]
    for size in result["sizes"]:
        lines.append(f"| {size['symbols']:,} | {size['before_ms']} | {size['now_ms']} | {size['ratio']}x |")
    load = result["machine"]
    return "\n".join(lines) + (
        f"\n\nmedian of {result['sizes'][0]['writes']} writes of {WORDS_PER_WRITE:,} words each per size; "
        f"`{result['command']}`; load average at the start {', '.join(map(str, load['load_avg_at_start']))}, "
        f"at the end {', '.join(map(str, load['load_avg_at_end']))}\n"
    )


def main() -> int:
    """`python -m bench.index.forget_mentioned`."""
    parser = arg_parser(__doc__)
    parser.add_argument("--sizes", type=int, nargs="+", default=[20_000, 200_000], help="symbols in the index")
    parser.add_argument("--writes", type=int, default=30, help="writes timed per size and implementation")
    add_common_options(parser, BENCH_OUT / "index")
    return run_and_save(parser.parse_args(), "forget_mentioned", run, render, (sqlite3.Error,))


if __name__ == "__main__":
    sys.exit(main())
