"""`[daemon.index]`: every cap on what indexing keeps is configurable, used, and shown by `lensmux status`."""

from __future__ import annotations

from pathlib import Path

import pytest

from lensmux.daemon.cli.views.status_view import render_indexes
from lensmux.daemon.config import Config, ConfigInvalid, DaemonConfig, HybridSearchConfig, IndexSettings, load_config
from lensmux.daemon.mux.internal_client import InternalClient
from lensmux.daemon.mux.registry import InstanceRegistry
from lensmux.daemon.search.index_inputs import index_config
from lensmux.daemon.search.indexing import IndexService

SET = IndexSettings(
    vector_cache_mb=3,
    token_memo_entries=5,
    symbol_cache_mb=4,
    max_file_kb=200,
    max_file_chunks=7,
    max_chunk_tokens=99,
    hnsw_m=8,
    hnsw_ef_construction=50,
    hnsw_ef_search=33,
    vector_save_growth=0.75,
    keyword_optimize_share=2.5,
    compact_fraction=0.5,
    commit_files=9,
    commit_chunks=90,
)


def test_every_cap_reaches_the_indexer() -> None:
    config = index_config(DaemonConfig(index=SET))
    assert (config.chunks.max_file_chunks, config.chunks.max_chunk_tokens) == (7, 99)
    assert (config.hnsw.m, config.hnsw.ef_construction, config.hnsw.ef_search) == (8, 50, 33)
    assert config.max_file_bytes == 200 * 1024
    assert (config.compact_fraction, config.commit_files, config.commit_chunks) == (0.5, 9, 90)
    assert (config.save_growth, config.keyword_optimize_share) == (0.75, 2.5)


def test_the_caps_are_read_from_the_configuration_file(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text("[daemon.index]\nvector_cache_mb = 0\nhnsw_m = 24\n\n[daemon.search]\nmax_neighbors = 10\n")
    config = load_config(path, explicit=True).daemon
    assert (config.index.vector_cache_mb, config.index.hnsw_m) == (0, 24)
    assert config.index_caps()["learned_edges_per_relation"] == 10
    path.write_text("[daemon.index]\nhnsw_m = 1000\n")
    with pytest.raises(ConfigInvalid, match="hnsw_m"):
        load_config(path, explicit=True)


def test_status_shows_every_cap() -> None:
    daemon = DaemonConfig(index=SET, search=HybridSearchConfig(max_neighbors=12))
    registry = InstanceRegistry(None, Config())  # type: ignore[arg-type]  # nothing here starts an instance
    status = IndexService(daemon, InternalClient(registry)).status()
    assert status["caps"] == {**{k: getattr(SET, k) for k in SET.__struct_fields__}, "learned_edges_per_relation": 12}
    shown = "\n".join(render_indexes(status))
    caps = "caps: vector_cache_mb 3, token_memo_entries 5, symbol_cache_mb 4, max_file_kb 200, max_file_chunks 7"
    assert caps in shown
    assert "learned_edges_per_relation 12" in shown
    cache = {"entries": 10, "bytes": 3 << 20, "max_bytes": 6 << 20, "hits": 4, "misses": 6, "evicted": 0, "path": "/c"}
    shown = "\n".join(render_indexes({**status, "vector_cache": cache}))
    assert "vector cache: 10 vectors, 3.0 of 6.0 MiB; 4 hits, 6 misses, 0 evicted  /c" in shown
    symbols = {"entries": 3, "bytes": 1 << 20, "max_bytes": 4 << 20, "hits": 2, "misses": 1, "evicted": 0, "path": "/s"}
    shown = "\n".join(render_indexes({**status, "symbol_cache": symbols}))
    assert "symbol cache: 3 answers, 1.0 of 4.0 MiB; 2 hits, 1 misses, 0 evicted  /s" in shown
    memo = {"entries": 4, "limit": 5, "hits": 7, "misses": 4}
    shown = "\n".join(render_indexes({**status, "token_memo": memo}))
    assert "token counts remembered: 4 of 5; 7 hits, 4 misses" in shown
