"""The team store ranks keywords as the embedded store does: FTS5's BM25, computed in SQL (issue 24).

The same tree is indexed once, published to a real PostgreSQL, and every query is asked of
both stores: the same chunks must come back in the same order with the same scores (ties
may be listed in either order; ids differ between stores, so chunks are compared by file,
line and name).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import psycopg
import pytest
from index_fakes import FakeEmbedder, FakeSymbolSource, module_text
from support.projects import write_files

from lensmux.graph.index import Indexer, IndexReader
from lensmux.graph.index.postgres.contents import keyword
from lensmux.graph.index.postgres.publish import Published, publish
from lensmux.graph.index.postgres.store import TeamStore
from lensmux.graph.search.candidates.query_text import keyword_expression

pytestmark = pytest.mark.anyio

TREE = {
    **{f"pkg/mod_{i}.py": module_text(i) for i in range(40)},
    "pkg/upload.py": (
        "import time\n\n\nclass Uploader:\n    def send(self, blob):\n        self.backoff_send(blob)\n\n"
        "    def backoff_send(self, blob):\n        time.sleep(1)\n        self.backoff_send_later(blob)\n\n\n"
        "def retry_upload(data):\n    return Uploader().send(data)\n"
    ),
    "pkg/café.py": "def crème_brûlée(naïve):\n    return naïve  # Ünïcode words fold as FTS5 folds them\n",
    "docs/retry.md": "# Retry policy\n\nWe use backoff. Backoff doubles. Retries retry retrying.\n",
}

QUERIES = [
    "backoff send",
    "retry upload policy",
    "compute value worker",
    "run task basename path",
    "Worker17 counter",
    "LIMIT_3 compute_value_3",
    "creme brulee naive",
    "café unicode",
    "retries",  # a prefix term (stems end in `*`)
    "os path count self",  # words in nearly every chunk: IDF clamped at FTS5's floor
    "nothing matches zzzz",
]


def _ranked(store: IndexReader, expression: str) -> list[tuple[float, tuple[str, int, str]]]:
    out = []
    for chunk_id, score in store.fts_search(expression, 60):
        chunk = store.chunk(chunk_id)
        assert chunk is not None
        out.append((score, (chunk.path, chunk.start_line, chunk.name)))
    return out


def _by_score(ranked: list[tuple[float, tuple[str, int, str]]]) -> list[tuple[float, list[tuple[str, int, str]]]]:
    """Chunks grouped by equal score, best first; the group cut by the limit is compared by its size only."""
    groups: dict[float, list[tuple[str, int, str]]] = {}
    for score, key in ranked:
        groups.setdefault(round(score, 9), []).append(key)
    out = [(score, sorted(keys)) for score, keys in groups.items()]
    if out:
        out[-1] = (out[-1][0], [("tied at the cut", len(out[-1][1]), "")])
    return out


@asynccontextmanager
async def _published(tmp_path: Path, team_database: str) -> AsyncIterator[tuple[Indexer, TeamStore, Published]]:
    """TREE indexed by the embedded store, and published as it is."""
    root = write_files(tmp_path / "repo", TREE)
    embedder = FakeEmbedder()
    team = TeamStore(team_database)
    try:
        async with Indexer(root, tmp_path / "state", embedder, FakeSymbolSource()) as ix:
            await ix.index_all()
            done = publish(team, root, ix.store, ix.vectors, repo="r", commit="c", model_id=ix.model_id,
                           dim=embedder.dim)  # fmt: skip
            yield ix, team, done
    finally:
        team.close()


async def test_keyword_ranking_and_scores_match_the_embedded_store(tmp_path: Path, team_database: str) -> None:
    async with _published(tmp_path, team_database) as (ix, team, published):
        store, _ = team.open(ix.root, published.snapshot)
        assert published.chunks == ix.store.counts().chunks
        compared = 0
        for query in QUERIES:
            expression = keyword_expression(query)
            assert expression is not None
            embedded, shared = _ranked(ix.store, expression), _ranked(store, expression)
            assert [s for s, _ in shared] == pytest.approx([s for s, _ in embedded], rel=1e-9), query
            assert _by_score(shared) == _by_score(embedded), query
            compared += len(embedded)
        assert compared > 100, "the queries must reach many chunks to compare"


# Plans the server may choose for the BM25 query, forced: each delivers a chunk's term rows
# to the final sum in its own order.
PLANS = {
    "hash aggregates": [],
    "sorted aggregates": ["SET enable_hashagg = off"],
    "parallel": [
        "SET debug_parallel_query = on",
        "SET parallel_setup_cost = 0",
        "SET parallel_tuple_cost = 0",
        "SET min_parallel_index_scan_size = 0",
        "SET min_parallel_table_scan_size = 0",
    ],
    "no index-only scan": ["SET enable_indexonlyscan = off", "SET enable_hashagg = off"],
}


async def test_keyword_scores_do_not_depend_on_the_plan(tmp_path: Path, team_database: str) -> None:
    # A chunk's terms are summed in the expression's order (keyword.py): in whatever order a
    # plan delivered them, the last bits differed between plans and equal scores tied differently.
    async with _published(tmp_path, team_database) as (_, _, published):
        expressions = [keyword_expression(q) for q in [*QUERIES, " ".join(QUERIES)]]
        answers: dict[str, list[list[tuple[int, float]]]] = {}
        for plan, settings in PLANS.items():
            with psycopg.connect(team_database, autocommit=True) as conn:
                for setting in settings:
                    conn.execute(setting)
                answers[plan] = [keyword.bm25(conn, published.snapshot.id, e, 60) for e in expressions if e]
    assert sum(len(a) for a in answers["hash aggregates"]) > 100, "the queries must reach many chunks"
    for plan in PLANS:
        assert answers[plan] == answers["hash aggregates"], plan


async def test_unlearned_symbols_by_language_match_the_embedded_store(tmp_path: Path, team_database: str) -> None:
    """The learner's lanes ask each store for one server's languages (daemon/search/graph_learning.py)."""
    async with _published(tmp_path, team_database) as (ix, team, published):
        store, _ = team.open(ix.root, published.snapshot)
        counts = {}
        for languages in (None, {"python"}, {"markdown"}, {"c", "cpp"}):
            embedded = ix.store.unlearned_symbols(0, 10_000, languages)
            assert len(store.unlearned_symbols(0, 10_000, languages)) == len(embedded), languages
            counts[None if languages is None else min(languages)] = len(embedded)
    assert counts["python"] > 0 and counts["c"] == 0
    assert counts[None] == counts["python"] + counts["markdown"]
