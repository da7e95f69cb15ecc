"""SIGKILL an indexing process at random moments; the index must always reopen consistent."""

from __future__ import annotations

import hashlib
import json
import os
import random
import re
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import anyio
import numpy
import pytest
from index_fakes import FakeEmbedder, FakeSymbolSource, crash_worker_config, module_text
from support.projects import write_files

from lensmux.graph.index import Indexer, VectorIndex
from lensmux.graph.index.records import VectorPointer
from lensmux.graph.index.sqlite.chunk_text import register_functions, unpack

HERE = Path(__file__).resolve().parents[1]  # tests/graph/index, where index_fakes lives
# index_fakes imports the shared fakes from tests/support.
TESTS = HERE.parent.parent


def _start_worker(root: Path, state: Path, save_interval_s: float = 0.0) -> subprocess.Popen[str]:
    code = (
        f"import sys; sys.path[:0] = [{str(HERE)!r}, {str(TESTS)!r}]; from index_fakes import run_indexer_main; "
        f"run_indexer_main({str(root)!r}, {str(state)!r}, {save_interval_s!r})"
    )
    return subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)


def _run_and_kill(root: Path, state: Path, batches: int, extra_delay: float, save_interval_s: float) -> bool:
    """Run the worker until it reported `batches` commits, then SIGKILL it; True if it finished first."""
    proc = _start_worker(root, state, save_interval_s)
    assert proc.stdout is not None
    finished = False
    for seen, line in enumerate(proc.stdout, 1):
        if '"done"' in line:
            finished = True
            break
        if seen >= batches:
            # Land somewhere inside the next batch: embedding, the transaction or the save.
            time.sleep(extra_delay)
            break
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    proc.stdout.close()
    return finished


def _check_raw_state(state: Path) -> None:
    """What is on disk right after the kill, before anything repairs it."""
    conn = sqlite3.connect(state / "index.sqlite")
    register_functions(conn)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        chunk_ids = {r[0] for r in conn.execute("SELECT id FROM chunks")}
        # The rows the keyword index holds (its content is a view of the chunks, so
        # `SELECT rowid FROM chunks_fts` would list the chunks whatever the index holds).
        fts_ids = {r[0] for r in conn.execute("SELECT id FROM chunks_fts_docsize")}
        assert fts_ids == chunk_ids, "keyword rows and chunks commit together"
        # And what it indexed for each is what the view yields (else a later delete corrupts it).
        conn.execute("INSERT INTO chunks_fts(chunks_fts, rank) VALUES ('integrity-check', 1)")
        meta = dict(conn.execute("SELECT key, value FROM meta"))
        assert int(meta["count_chunks"]) == len(chunk_ids)
        seq = dict(conn.execute("SELECT name, seq FROM sqlite_sequence")).get("chunks", 0)
        texts = {i: unpack(blob) for i, blob in conn.execute("SELECT id, text FROM chunks")}
    finally:
        conn.close()
    if "vectors" not in meta:
        return
    pointer = VectorPointer(**json.loads(meta["vectors"]))
    vectors = VectorIndex.load(state, pointer)  # never IndexCorrupt after a kill
    labels = vectors.labels()
    assert all(label <= seq for label in labels), "every label is a chunk id that was committed"
    sample = sorted(labels & chunk_ids)[:50]
    stored = vectors.vectors(sample)
    expected = FakeEmbedder().embed([texts[i] for i in sample])
    for row, label in enumerate(sample):
        if label in stored:
            assert numpy.allclose(stored[label], expected[row], atol=1e-5), f"label {label} has another chunk's vector"


async def _check_reopened(root: Path, state: Path) -> int:
    """After reconcile: vectors and chunks line up, and both kinds of search work; returns pending."""
    async with Indexer(root, state, FakeEmbedder(), FakeSymbolSource(), config=crash_worker_config()) as ix:
        chunk_ids = ix.store.chunk_ids()
        labels = ix.vectors.labels()
        assert labels <= chunk_ids, "no vector without a chunk"
        pending = ix.pending_vectors
        assert len(chunk_ids - labels) == pending, "every chunk has a vector or is scheduled"
        if chunk_ids:
            assert ix.store.keyword_search("compute value", 5)
            await ix.embed_pending()
            some = ix.store.chunk(min(chunk_ids))
            assert some is not None
            assert (await ix.semantic_search(some.text, 1))[0][0] == some.id
    return pending


def _mutate(root: Path, rng: random.Random, round_: int) -> None:
    files = sorted(root.rglob("*.py"))
    for path in rng.sample(files, 60):
        path.write_text(path.read_text() + f"\n\ndef patched_{round_}_{path.stem}():\n    return {round_}\n")
    for path in rng.sample([p for p in files if p.exists()], 5):
        path.unlink()
    write_files(root, {f"added/r{round_}_{i}.py": module_text(1000 + round_ * 100 + i) for i in range(15)})


@pytest.mark.slow
def test_kill_at_random_moments_leaves_a_consistent_index(tmp_path: Path) -> None:
    rng = random.Random(20240611)
    root, state = tmp_path / "repo", tmp_path / "state"
    write_files(root, {f"pkg{i % 10}/mod{i}.py": module_text(i) for i in range(300)})
    write_files(root, {f"docs/page{i}.md": f"# Page {i}\n\nAbout workers and values {i}.\n" for i in range(20)})
    kills = 0
    repaired = 0
    for round_ in range(8):
        # Odd rounds save vectors only now and then, so kills leave committed chunks unsaved.
        save_interval = 0.0 if round_ % 2 == 0 else 0.3
        batches, delay = rng.randint(1, 8), rng.uniform(0, 0.05)
        finished = _run_and_kill(root, state, batches, delay, save_interval)
        kills += not finished
        if (state / "index.sqlite").exists():
            _check_raw_state(state)
            repaired += anyio.run(_check_reopened, root, state) > 0
        _mutate(root, rng, round_)
    assert kills >= 4, "the test must actually interrupt runs"
    assert repaired >= 1, "some kill must have left chunks without vectors (else reconcile went untested)"

    proc = _start_worker(root, state)
    out, _ = proc.communicate(timeout=240)
    assert proc.returncode == 0 and '"done"' in out
    _check_raw_state(state)

    async def final() -> None:
        async with Indexer(root, state, FakeEmbedder(), FakeSymbolSource()) as ix:
            assert ix.pending_vectors == 0
            assert ix.vectors.labels() == ix.store.chunk_ids()
            on_disk = {p.relative_to(root).as_posix(): p for p in root.rglob("*") if p.is_file()}
            indexed = ix.store.file_stamps()
            assert set(indexed) == set(on_disk)
            for rel, stamp in indexed.items():
                assert stamp.sha256 == hashlib.sha256(on_disk[rel].read_bytes()).hexdigest(), rel
            patched = {m for p in on_disk.values() for m in re.findall(r"def (patched_\w+)", p.read_text())}
            assert len(patched) > 10
            for name in patched:
                assert [s.name for s in ix.store.lookup_symbols(name)] == [name]

    anyio.run(final)
    assert not [p for p in os.listdir(state) if p.endswith(".tmp")]
