"""The keyword index stays in proportion to the tree however often its files are re-indexed (issue 23).

FTS5 deletes with tombstones; the deleted entries stay in its largest segments until a
merge reaches them. Store.optimize_keywords rewrites the index whole once the deletions
reach a share of its chunks: the index stays within a bound of a freshly built one, and
its bm25() scores are those of a fresh index of the same chunks.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from lensmux.graph.index.builder.preparing.chunking import ChunkDraft
from lensmux.graph.index.builder.preparing.document_symbols import LspRange, ParsedSymbol
from lensmux.graph.index.records import FileWrite
from lensmux.graph.index.sqlite.chunk_text import register_functions
from lensmux.graph.index.sqlite.store import Store

_WORDS = ["parse", "header", "request", "HTTPHeaders", "send_body", "retry", "close", "uv_loop", "buffer", "token"]
FILES, CHUNKS, ROUNDS = 30, 6, 12


def _file(f: int, round_: int) -> FileWrite:
    symbols, chunks = [], []
    for c in range(CHUNKS):
        words = " ".join(f"{_WORDS[(f + c + i + round_) % len(_WORDS)]}_{(round_ * 7 + i) % 13}" for i in range(12))
        name = f"fn_{f}_{c}"
        symbols.append(
            ParsedSymbol(
                name=name,
                qualified_name=name,
                kind="function",
                detail=None,
                range=LspRange(c * 3, 0, c * 3 + 2, 0),
                selection_range=LspRange(c * 3, 4, c * 3, 6),
                container=None,
                parent=None,
                depth=0,
            )
        )
        text = f"def {name}(): {words}\n"
        chunks.append(ChunkDraft(kind="function", name=name, start_line=c * 3, end_line=c * 3 + 2, text=text, symbol=c))
    return FileWrite(
        f"src/m{f}.py", "python", f"{round_:064x}", round_, 10, "lsp", symbols, chunks, [9] * CHUNKS, frozenset()
    )


def _index_bytes(store: Store) -> int:
    conn = sqlite3.connect(store.path)
    register_functions(conn)
    try:
        conn.execute("INSERT INTO chunks_fts(chunks_fts, rank) VALUES ('integrity-check', 1)")
        return int(conn.execute("SELECT sum(pgsize) FROM dbstat WHERE name = 'chunks_fts_data'").fetchone()[0])
    finally:
        conn.close()


def _reindexed(directory: Path, root: Path, share: float | None) -> Store:
    """A store whose files were rewritten ROUNDS times, one file a transaction (as edits come)."""
    store = Store.open(directory, root, model_id="m", dim=4)
    for round_ in range(ROUNDS):
        for f in range(FILES):
            store.write_files([_file(f, round_)])
        if share is not None:
            store.optimize_keywords(share)
    return store


_QUERIES = ['"parse"', '"header_3" OR "retry"', '"fn_3_2"', '"send"', '"token_12" OR "buffer_1"']


def test_re_indexing_keeps_the_keyword_index_in_proportion_and_its_scores(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    fresh = Store.open(tmp_path / "fresh", root, model_id="m", dim=4)
    kept = _reindexed(tmp_path / "kept", root, share=0.5)
    grown = _reindexed(tmp_path / "grown", root, share=None)
    try:
        # The same final chunks, written once.
        fresh.write_files([_file(f, ROUNDS - 1) for f in range(FILES)])
        fresh_bytes, kept_bytes, grown_bytes = _index_bytes(fresh), _index_bytes(kept), _index_bytes(grown)
        print(f"keyword index bytes: fresh {fresh_bytes}, kept {kept_bytes}, grown {grown_bytes}")
        assert kept_bytes <= 2 * fresh_bytes, f"{kept_bytes} B kept against {fresh_bytes} B fresh"
        assert grown_bytes > 2 * fresh_bytes, "without the rewrite the index grows with the rewrites"

        def scores(store: Store) -> dict[str, list[tuple[str, float]]]:
            # Chunk ids differ between the stores; the chunks' names say which is which.
            out = {}
            for q in _QUERIES:
                hits = store.fts_search(q, 500)
                out[q] = sorted((store.chunk(i).name, s) for i, s in hits)  # type: ignore[union-attr]
            return out

        assert scores(kept) == scores(fresh) == scores(grown)
    finally:
        for store in (fresh, kept, grown):
            store.close()
