"""The hnswlib vector index: search, deletion, growth, compaction, checked atomic saves."""

from __future__ import annotations

import dataclasses
import itertools
from pathlib import Path

import numpy
import numpy.typing as npt
import pytest

from lensmux.graph.index import IndexCorrupt, VectorIndex
from lensmux.graph.index.sqlite.vectors import remove_stale_files

DIM = 16


def _unit(rows: int, seed: int) -> npt.NDArray[numpy.float32]:
    data = numpy.random.default_rng(seed).normal(size=(rows, DIM)).astype(numpy.float32)
    unit: npt.NDArray[numpy.float32] = data / numpy.linalg.norm(data, axis=1, keepdims=True)
    return unit


def test_search_finds_each_vector_itself_and_skips_removed_ones() -> None:
    index = VectorIndex(DIM)
    data = _unit(3000, 1)  # more than the initial capacity, so the graph has to grow
    labels = list(range(1000, 4000))
    index.add(labels, data)
    assert len(index) == 3000
    for row in (0, 1234, 2999):
        (best, similarity), *_ = index.search(data[row], 5)
        assert best == labels[row]
        assert similarity == pytest.approx(1.0, abs=1e-4)
    assert index.search(data[1234], 3, ef=400)[0][0] == labels[1234]
    index.remove([1000, 1001, 999_999])
    assert 1000 not in index and len(index) == 2998
    found = [label for label, _ in index.search(data[0], 10)]
    assert 1000 not in found and 1001 not in found
    assert index.search(data[0], 0) == []


def _chunks_and_questions(seed: int) -> tuple[npt.NDArray[numpy.float32], npt.NDArray[numpy.float32]]:
    """Vectors shaped like a real index's: chunk vectors sharing one strong direction, in many
    tight groups (a real index's average pairwise cosine is about 0.6), and questions in words
    that lie far from all of them (their best chunk at a cosine near 0.5, not 0.9)."""
    rng = numpy.random.default_rng(seed)
    dim, groups = 384, 300
    common = rng.normal(size=dim)
    centres = rng.normal(size=(groups, dim)) + 3.0 * common
    chunks = centres[rng.integers(groups, size=8000)]
    chunks = chunks + 0.5 * rng.normal(size=chunks.shape) * rng.uniform(0.3, 1.5, size=(len(chunks), 1))
    questions = 0.3 * centres[rng.integers(groups, size=40)] + 3.0 * common + 2.0 * rng.normal(size=dim)
    questions = questions + 0.8 * rng.normal(size=questions.shape)
    chunks /= numpy.linalg.norm(chunks, axis=1, keepdims=True)
    questions /= numpy.linalg.norm(questions, axis=1, keepdims=True)
    return chunks.astype(numpy.float32), questions.astype(numpy.float32)


def test_a_question_far_from_every_chunk_still_gets_its_nearest_chunks() -> None:
    # Search asks for 100 neighbours; a graph searched with a candidate list no longer than
    # that returned, for such questions, barely 87% of the true nearest 100 (one question
    # two thirds), so seeds the question was closest to never reached the fusion.
    index = VectorIndex(384)
    chunks, questions = _chunks_and_questions(7)
    index.add(list(range(len(chunks))), chunks)
    recalls = []
    for question in questions:
        exact = set(numpy.argsort(-(chunks @ question))[:100].tolist())
        found = {label for label, _ in index.search(question, 100)}
        recalls.append(len(found & exact) / 100)
    assert sum(recalls) / len(recalls) >= 0.97
    assert min(recalls) >= 0.9


def test_up_to_its_exact_size_a_search_returns_exactly_the_nearest_in_order() -> None:
    # The same list an exact search gives, ties by label, which is also what the team store
    # returns for the same vectors; the graph, even at ef 400, misses some of these.
    index = VectorIndex(384)
    chunks, questions = _chunks_and_questions(4)
    index.add(list(range(len(chunks))), chunks)
    assert len(chunks) <= index.params.exact_below
    for question in questions:
        found = index.search(question, 100)
        assert_exact_nearest(found, chunks @ question, 100)
    index.remove([label for label, _ in index.search(questions[-1], 5)])
    scores = chunks @ questions[-1]
    scores[numpy.argsort(-scores)[:5]] = -2.0
    assert_exact_nearest(index.search(questions[-1], 95), scores, 95)


def test_the_exact_search_after_changes_answers_as_an_index_holding_only_the_result() -> None:
    # The exact-search matrix is read out of the graph once and then kept in step with every
    # add, replacement and removal: a search after an edit must see the new vectors, never
    # the replaced or removed ones, and break ties exactly as a freshly read matrix does.
    chunks, questions = _chunks_and_questions(5)
    changed = VectorIndex(384)
    changed.add(range(6000), chunks[:6000])
    changed.search(questions[0], 10)  # the matrix is read here
    changed.add(range(6000, 7000), chunks[6000:7000])  # new chunks
    changed.add(range(0, 1000, 3), chunks[7000:7334])  # chunks whose text changed
    changed.remove(range(1, 3000, 7))  # chunks deleted
    again = range(8, 3000, 7 * 13)  # deleted, then written again
    changed.add(again, chunks[7334 : 7334 + len(again)])
    final = {label: chunks[label] for label in range(7000)}
    final.update(zip(range(0, 1000, 3), chunks[7000:7334], strict=True))
    for label in range(1, 3000, 7):
        final.pop(label)
    final.update(zip(again, chunks[7334 : 7334 + len(again)], strict=True))
    fresh = VectorIndex(384)
    fresh.add(list(final), numpy.stack(list(final.values())))
    assert changed.labels() == fresh.labels()
    for question in questions:
        assert changed.search(question, 100) == fresh.search(question, 100)
    changed.compact()
    assert changed.search(questions[3], 100) == fresh.search(questions[3], 100)


def assert_exact_nearest(found: list[tuple[int, float]], scores: npt.NDArray[numpy.float32], k: int) -> None:
    """found is the k best of scores (label = row), most similar first, equal scores by label.

    Float rounding differs between the store and this product by ~1e-7, so labels whose score
    is that close to the k-th best may be in either list.
    """
    assert len(found) == k
    assert [s for _, s in found] == pytest.approx([float(scores[label]) for label, _ in found], abs=1e-5)
    kth = float(numpy.sort(scores)[::-1][k - 1])
    sure = {int(i) for i in numpy.flatnonzero(scores > kth + 1e-5)}
    assert sure <= {label for label, _ in found}
    assert all(scores[label] >= kth - 1e-5 for label, _ in found)
    for (a, sa), (b, sb) in itertools.pairwise(found):
        assert sa > sb or (sa == sb and a < b)


def test_compaction_drops_deleted_elements_and_keeps_results() -> None:
    index = VectorIndex(DIM)
    data = _unit(500, 2)
    index.add(range(500), data)
    index.remove(range(0, 500, 2))
    assert index.deleted_fraction == pytest.approx(0.5)
    index.compact()
    assert index.deleted_fraction == 0.0
    assert index.labels() == set(range(1, 500, 2))
    assert index.search(data[7], 1)[0][0] == 7
    # Asking for more than there are returns what there is instead of failing.
    assert len(index.search(data[7], 10_000)) == 250


def test_save_and_load_round_trip(tmp_path: Path) -> None:
    index = VectorIndex(DIM)
    data = _unit(200, 3)
    index.add(range(10, 210), data)
    pointer = index.save(tmp_path, 7)
    assert pointer.file == "vectors-0000000007.hnsw" and pointer.count == 200 and pointer.dim == DIM
    assert not list(tmp_path.glob("*.tmp")), "the temporary file was renamed into place"
    loaded = VectorIndex.load(tmp_path, pointer)
    assert loaded.labels() == set(range(10, 210))
    assert loaded.search(data[5], 1)[0][0] == 15
    stored = loaded.vectors([15, 9999])
    assert set(stored) == {15}
    assert numpy.allclose(stored[15], data[5], atol=1e-5)


@pytest.mark.parametrize("damage", ["garbage", "truncated", "flipped", "missing"])
def test_damaged_file_is_reported_as_corrupt_before_hnswlib_reads_it(tmp_path: Path, damage: str) -> None:
    index = VectorIndex(DIM)
    index.add(range(50), _unit(50, 4))
    pointer = index.save(tmp_path, 1)
    path = tmp_path / pointer.file
    raw = path.read_bytes()
    if damage == "garbage":
        path.write_bytes(b"\xff" * len(raw))
    elif damage == "truncated":
        path.write_bytes(raw[: len(raw) // 2])
    elif damage == "flipped":
        path.write_bytes(raw[:100] + bytes([raw[100] ^ 0xFF]) + raw[101:])
    else:
        path.unlink()
    with pytest.raises(IndexCorrupt):
        VectorIndex.load(tmp_path, pointer)


def test_pointer_with_wrong_count_is_corrupt(tmp_path: Path) -> None:
    index = VectorIndex(DIM)
    index.add(range(5), _unit(5, 5))
    pointer = index.save(tmp_path, 1)
    with pytest.raises(IndexCorrupt):
        VectorIndex.load(tmp_path, dataclasses.replace(pointer, count=6))


def test_stale_generations_and_temp_files_are_removed(tmp_path: Path) -> None:
    index = VectorIndex(DIM)
    index.add([1], _unit(1, 6))
    old = index.save(tmp_path, 1)
    new = index.save(tmp_path, 2)
    (tmp_path / "vectors-0000000003.hnsw.tmp").write_bytes(b"half written")
    (tmp_path / "index.sqlite").write_bytes(b"not ours to touch")
    remove_stale_files(tmp_path, new.file)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["index.sqlite", new.file]
    assert old.file != new.file
