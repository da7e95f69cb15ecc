"""The user's documentSymbol answers by key: bounded, least recently used evicted, never a failed run."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from lensmux.graph.index.builder.caches.symbol_cache import SymbolCache


def _answer(name: str) -> list[dict[str, object]]:
    span = {"start": {"line": 0, "character": 0}, "end": {"line": 3, "character": 9}}
    return [{"name": name, "kind": 12, "range": span, "selectionRange": span, "children": []}]


def test_answers_come_back_by_key_only_and_survive_a_reopen(tmp_path: Path) -> None:
    cache = SymbolCache.open(tmp_path / "symbols.sqlite")
    cache.put(b"k1", _answer("alpha"))
    assert cache.get(b"k1") == _answer("alpha")
    assert cache.get(b"k2") is None
    assert (cache.stats().hits, cache.stats().misses, cache.stats().entries) == (1, 1, 1)
    cache.close()
    again = SymbolCache.open(tmp_path / "symbols.sqlite")
    try:
        assert again.get(b"k1") == _answer("alpha") and again.stats().entries == 1
    finally:
        again.close()


def test_the_cache_keeps_to_its_bound_and_evicts_the_least_recently_used(tmp_path: Path) -> None:
    probe = SymbolCache.open(tmp_path / "probe.sqlite")
    probe.put(b"p", _answer("name-00"))
    row = probe.stats().bytes
    probe.close()
    cache = SymbolCache.open(tmp_path / "symbols.sqlite", max_bytes=int(10.5 * row))
    try:
        for i in range(10):
            cache.put(f"k{i}".encode(), _answer(f"name-{i:02d}"))
        assert cache.get(b"k0") is not None  # k0 used: k1 is now the least recently used
        cache.put(b"k10", _answer("name-10"))
        stats = cache.stats()
        assert stats.bytes <= stats.max_bytes and stats.evicted >= 1
        assert cache.get(b"k1") is None, "the least recently used answer went"
        assert cache.get(b"k0") is not None and cache.get(b"k10") is not None
    finally:
        cache.close()


def test_a_corrupt_file_is_started_again_with_a_log_line(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "symbols.sqlite"
    path.write_bytes(b"not a database " * 1000)
    with caplog.at_level(logging.ERROR):
        cache = SymbolCache.open(path)
    try:
        assert any("is corrupt" in r.getMessage() for r in caplog.records)
        assert cache.stats().rebuilt == 1
        cache.put(b"k", _answer("alpha"))
        assert cache.get(b"k") == _answer("alpha")
    finally:
        cache.close()
