"""Where a root's index spends its disk, in bytes per chunk (issue 23, item 3: <= 3 KiB a chunk).

    python -m bench.index.disk_bytes DIR [DIR ...]      # DIR holds index.sqlite (+ vectors-*.hnsw)

Reads a copy, never a live index: the file is VACUUMed into a temporary file first so free
pages left by earlier writes do not count, then the `dbstat` virtual table gives the pages
of every table and index. Tables of one FTS5 table (chunks_fts_*) are listed one by one,
because the content table (its second copy of the text) is what issue 23 removes.
"""

from __future__ import annotations

import argparse
import sqlite3
import sys
import tempfile
from pathlib import Path

from lensmux.graph.index.sqlite.chunk_text import register_functions


def breakdown(db: Path) -> tuple[int, int, dict[str, int]]:
    """(chunks, total bytes after VACUUM, bytes per table or index)."""
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / "copy.sqlite"
        src = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        register_functions(src)
        src.execute("VACUUM INTO ?", (str(copy),))
        src.close()
        conn = sqlite3.connect(copy)
        register_functions(conn)
        chunks = conn.execute("SELECT count(*) FROM chunks").fetchone()[0]
        rows = conn.execute("SELECT name, sum(pgsize) FROM dbstat GROUP BY name ORDER BY 2 DESC").fetchall()
        total = copy.stat().st_size
        conn.close()
    return chunks, total, {name: size for name, size in rows}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("dirs", nargs="+", type=Path)
    args = parser.parse_args(argv)
    for directory in args.dirs:
        chunks, total, sizes = breakdown(directory / "index.sqlite")
        vectors = sum(p.stat().st_size for p in directory.glob("vectors-*.hnsw"))
        print(f"{directory}: {chunks} chunks")
        for name, size in sizes.items():
            print(f"  {name:32s} {size:>12,d} B  {size / chunks:8.1f} B/chunk")
        print(f"  {'sqlite total (vacuumed)':32s} {total:>12,d} B  {total / chunks:8.1f} B/chunk")
        print(f"  {'vectors (hnsw file)':32s} {vectors:>12,d} B  {vectors / chunks:8.1f} B/chunk")
        both = total + vectors
        print(f"  {'index on disk':32s} {both:>12,d} B  {both / chunks:8.1f} B/chunk ({both / chunks / 1024:.2f} KiB)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
