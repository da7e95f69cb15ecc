"""The indexer end to end with a fake embedder and symbol source: incremental runs and recovery."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import anyio
import pytest
from index_fakes import FakeEmbedder, FakeSymbolSource, module_text
from support.projects import write_files

from lensmux.graph.index import EmbeddingFailed, IndexConfig, Indexer
from lensmux.graph.index.sqlite.chunk_text import register_functions

pytestmark = pytest.mark.anyio


def _tree(root: Path, count: int = 12) -> None:
    write_files(root, {f"pkg/mod{i}.py": module_text(i) for i in range(count)})
    write_files(root, {"README.md": "# Demo\n\nWorkers compute values.\n", "native/add.c": "int add(int a) {}\n"})


def _paths(ix: Indexer, word: str) -> set[str]:
    """Files of the keyword hits that really contain the word."""
    return {c.path for cid, _ in ix.store.keyword_search(word, 50) if (c := ix.store.chunk(cid)) and word in c.text}


async def test_second_run_skips_unchanged_files(tmp_path: Path) -> None:
    _tree(tmp_path / "repo")
    embedder, symbols = FakeEmbedder(), FakeSymbolSource()
    async with Indexer(tmp_path / "repo", tmp_path / "state", embedder, symbols) as ix:
        first = await ix.index_all()
        assert first.state == "ready" and first.files_done == 14
        status = ix.status()
        assert status.files == 14 and status.vectors == status.chunks and status.pending_vectors == 0
        embedded, asked = len(embedder.texts), len(symbols.calls)
        assert embedded == status.chunks

        os.utime(tmp_path / "repo/pkg/mod3.py", ns=(1, 1))  # new mtime, same content
        second = await ix.index_all()
        assert second.files_total == 1, "only the touched file is looked at"
        assert len(embedder.texts) == embedded, "nothing is embedded again"
        assert len(symbols.calls) == asked, "an unchanged hash needs no language server"

    async with Indexer(tmp_path / "repo", tmp_path / "state", embedder, symbols) as ix:
        await ix.index_all()
        assert len(embedder.texts) == embedded, "vectors survive closing and reopening"
        assert ix.pending_vectors == 0


async def test_modified_file_is_reindexed_and_only_changed_chunks_embedded(tmp_path: Path) -> None:
    _tree(tmp_path / "repo")
    embedder = FakeEmbedder()
    async with Indexer(tmp_path / "repo", tmp_path / "state", embedder, FakeSymbolSource()) as ix:
        await ix.index_all()
        before = len(embedder.texts)
        path = tmp_path / "repo/pkg/mod5.py"
        path.write_text(path.read_text().replace("return x * 5 + LIMIT_5", "return quantum_flux(x)"))
        await ix.index_all()
        new_texts = embedder.texts[before:]
        assert len(new_texts) == 1 and "quantum_flux" in new_texts[0], "unchanged chunks keep their vectors"
        assert _paths(ix, "quantum_flux") == {"pkg/mod5.py"}
        (cid, _), *_ = ix.store.keyword_search("quantum flux", 1)
        chunk = ix.store.chunk(cid)
        assert chunk is not None and chunk.name == "compute_value_5"
        (best, similarity), *_ = await ix.semantic_search(chunk.text, 1)
        assert best == cid and similarity == pytest.approx(1.0, abs=1e-4)
        assert ix.status().vectors == ix.status().chunks


async def test_an_edit_keeps_the_rows_and_vectors_of_the_chunks_it_did_not_change(tmp_path: Path) -> None:
    # A function written above the others moves every chunk down without changing its text:
    # those chunks keep their rows, vectors and keyword entries, and their lines follow
    # the text. Rewriting them all cost an edit of a large file hundreds of milliseconds
    # and left replaced copies in the vector graph until its next compaction.
    _tree(tmp_path / "repo")
    embedder = FakeEmbedder()
    async with Indexer(tmp_path / "repo", tmp_path / "state", embedder, FakeSymbolSource()) as ix:
        await ix.index_all()
        path = tmp_path / "repo/pkg/mod5.py"
        before = {c.text: c for c in ix.store.chunks_in_file("pkg/mod5.py")}
        embedded = len(embedder.texts)
        edited = "def quantum_flux(x: int) -> int:\n    return x\n\n\n" + path.read_text()
        assert await ix.reindex_text(path, edited)
        after = {c.text: c for c in ix.store.chunks_in_file("pkg/mod5.py")}
        same = before.keys() & after.keys()
        assert len(same) >= 3, "the module's functions and class are unchanged text"
        for text in same:
            assert after[text].id == before[text].id, "an unchanged chunk keeps its row and vector label"
            assert after[text].start_line == before[text].start_line + 4, "its lines follow the text"
            assert edited.splitlines()[after[text].start_line].strip() in text
        assert len(embedder.texts) - embedded == len(after.keys() - same)
        assert ix.vectors.deleted_count == len(before.keys() - same), "only the changed chunks left copies"
        assert ix.status().vectors == ix.status().chunks
        assert _paths(ix, "quantum_flux") == {"pkg/mod5.py"}
        assert _paths(ix, "compute_value_5") == {"pkg/mod5.py"}
        (best, _), *_ = await ix.semantic_search(next(iter(same)), 1)
        assert best == after[next(iter(same))].id
        database = ix.store.path
    conn = sqlite3.connect(database)
    register_functions(conn)
    try:  # the keyword index agrees with the rows it indexes (a kept row's entry is still right)
        conn.execute("INSERT INTO chunks_fts(chunks_fts, rank) VALUES ('integrity-check', 1)")
    finally:
        conn.close()


async def test_deleted_file_disappears_from_every_lookup(tmp_path: Path) -> None:
    _tree(tmp_path / "repo")
    async with Indexer(tmp_path / "repo", tmp_path / "state", FakeEmbedder(), FakeSymbolSource()) as ix:
        await ix.index_all()
        chunks_before = ix.status().chunks
        assert "pkg/mod7.py" in _paths(ix, "compute_value_7")
        (tmp_path / "repo/pkg/mod7.py").unlink()
        await ix.index_all()
        assert "pkg/mod7.py" not in _paths(ix, "compute_value_7")
        assert ix.store.file("pkg/mod7.py") is None
        assert ix.store.lookup_symbols("Worker7") == []
        status = ix.status()
        assert status.chunks is not None and chunks_before is not None
        assert status.chunks < chunks_before and status.vectors == status.chunks


async def test_ignored_binary_and_newly_ignored_files(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    _tree(root, 3)
    write_files(root, {".gitignore": "generated/\n", "generated/big_table.py": "TABLE = [1, 2, 3]\n"})
    (root / "pkg/blob.c").write_bytes(b"int x;\0\0\0")
    async with Indexer(root, tmp_path / "state", FakeEmbedder(), FakeSymbolSource()) as ix:
        await ix.index_all()
        assert ix.store.files_matching("generated") == []
        assert ix.store.file("pkg/blob.c") is None
        assert ix.store.file("pkg/mod1.py") is not None
        (root / ".gitignore").write_text("generated/\npkg/mod1.py\n")
        await ix.index_all()
        assert ix.store.file("pkg/mod1.py") is None
        assert await ix.reindex_file(root / "pkg/mod1.py") is False
        assert await ix.reindex_file(root / "generated/big_table.py") is False
        assert ix.store.file("pkg/mod1.py") is None


async def test_single_file_updates_and_directory_removal(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    _tree(root, 3)
    async with Indexer(root, tmp_path / "state", FakeEmbedder(), FakeSymbolSource()) as ix:
        await ix.index_all()
        write_files(root, {"pkg/sub/extra.py": "def freshly_added_helper():\n    return 1\n"})
        assert await ix.reindex_file(root / "pkg/sub/extra.py") is True
        assert await ix.reindex_file("pkg/sub/extra.py") is False, "same content: nothing to do"
        assert [s.qualified_name for s in ix.store.lookup_symbols("freshly_added_helper")] == ["freshly_added_helper"]
        removed = await ix.remove_file(root / "pkg")
        assert removed > 0
        assert ix.store.files_matching("pkg/") == []
        assert ix.status().vectors == ix.status().chunks


async def test_corrupt_vector_file_is_rebuilt_from_the_database(tmp_path: Path) -> None:
    _tree(tmp_path / "repo")
    embedder = FakeEmbedder()
    async with Indexer(tmp_path / "repo", tmp_path / "state", embedder, FakeSymbolSource()) as ix:
        await ix.index_all()
        chunks = ix.status().chunks
    (vector_file,) = (tmp_path / "state").glob("vectors-*.hnsw")
    vector_file.write_bytes(os.urandom(vector_file.stat().st_size))

    embedder.texts.clear()
    async with Indexer(tmp_path / "repo", tmp_path / "state", embedder, FakeSymbolSource()) as ix:
        assert ix.pending_vectors == chunks
        assert "vector index unusable" in (ix.status().progress.last_error or "")
        assert ix.store.keyword_search("compute value", 1), "keyword search works before re-embedding"
        await ix.index_all()
        assert ix.pending_vectors == 0 and len(embedder.texts) == chunks
        chunk = ix.store.chunks_in_file("pkg/mod2.py")[0]
        assert (await ix.semantic_search(chunk.text, 1))[0][0] == chunk.id
    assert [p.name for p in (tmp_path / "state").glob("vectors-*")] != [vector_file.name]


async def test_corrupt_database_is_moved_aside_and_the_root_reindexed(tmp_path: Path) -> None:
    _tree(tmp_path / "repo")
    async with Indexer(tmp_path / "repo", tmp_path / "state", FakeEmbedder(), FakeSymbolSource()) as ix:
        await ix.index_all()
    db = tmp_path / "state/index.sqlite"
    db.write_bytes(b"\x00garbage" * 4096)
    async with Indexer(tmp_path / "repo", tmp_path / "state", FakeEmbedder(), FakeSymbolSource()) as ix:
        assert "corrupt" in str(ix.status().progress.last_error)
        assert ix.status().files == 0 and ix.status().vectors == 0, "old vectors are not trusted"
        await ix.index_all()
        assert ix.status().files == 14
        assert _paths(ix, "compute_value_4") == {"pkg/mod4.py"}
    assert len(list((tmp_path / "state").glob("index.sqlite.corrupt-*"))) == 1


async def test_symbol_source_failure_falls_back_to_windows_and_is_retried(tmp_path: Path) -> None:
    _tree(tmp_path / "repo", 2)
    symbols = FakeSymbolSource()
    symbols.failing.add("mod1.py")
    async with Indexer(tmp_path / "repo", tmp_path / "state", FakeEmbedder(), symbols) as ix:
        await ix.index_all()
        record = ix.store.file("pkg/mod1.py")
        assert record is not None and record.structure == "failed"
        assert _paths(ix, "compute_value_1") == {"pkg/mod1.py"}, "content is searchable anyway"
        assert ix.store.lookup_symbols("Worker1") == []
        symbols.failing.clear()
        await ix.index_all()
        assert [s.kind for s in ix.store.lookup_symbols("Worker1")] == ["class"]


async def test_embedder_failure_is_typed_and_leaves_the_index_consistent(tmp_path: Path) -> None:
    _tree(tmp_path / "repo", 4)
    embedder = FakeEmbedder()
    embedder.fail_next = True
    config = IndexConfig(commit_files=2)
    async with Indexer(tmp_path / "repo", tmp_path / "state", embedder, FakeSymbolSource(), config=config) as ix:
        with pytest.raises(EmbeddingFailed):
            await ix.index_all()
        status = ix.status()
        assert status.progress.state == "error" and "injected" in str(status.progress.last_error)
        assert status.vectors == status.chunks
        done = await ix.index_all()
        assert done.state == "ready"
        assert ix.status().files == 6 and ix.status().vectors == ix.status().chunks


async def test_flat_symbol_information_source(tmp_path: Path) -> None:
    _tree(tmp_path / "repo", 2)
    async with Indexer(tmp_path / "repo", tmp_path / "state", FakeEmbedder(), FakeSymbolSource(flat=True)) as ix:
        await ix.index_all()
        (method,) = ix.store.lookup_symbols("Worker1.run_task_1")
        assert method.kind == "method" and method.container == "Worker1"
        enclosing = ix.store.enclosing_symbol("pkg/mod1.py", method.range.start_line + 1)
        assert enclosing is not None and enclosing.id == method.id


async def test_a_save_seen_three_ways_at_once_embeds_the_new_function_once(tmp_path: Path) -> None:
    _tree(tmp_path / "repo")
    embedder = FakeEmbedder()
    async with Indexer(tmp_path / "repo", tmp_path / "state", embedder, FakeSymbolSource()) as ix:
        await ix.index_all()
        before = len(embedder.texts)
        path = tmp_path / "repo/pkg/mod5.py"
        saved = path.read_text() + "\n\ndef quantum_flux(x: int) -> int:\n    return x - 5\n"
        path.write_text(saved)
        # The editor's change, its didSave and the watcher's event arrive together.
        async with anyio.create_task_group() as tg:
            tg.start_soon(ix.reindex_text, path, saved)
            tg.start_soon(ix.reindex_file, path)
            tg.start_soon(ix.reindex_file, path)
        new_texts = embedder.texts[before:]
        # The function and the module outline that now names it, once each.
        assert new_texts and all("quantum_flux" in t for t in new_texts), "the rest of the file keeps its vectors"
        assert len(set(new_texts)) == len(new_texts), "nothing is embedded twice"
        assert _paths(ix, "quantum_flux") == {"pkg/mod5.py"}
        assert ix.status().vectors == ix.status().chunks
