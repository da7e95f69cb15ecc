"""Learning the call graph ahead of searches, a few symbols at a time.

The daemon runs a round whenever its servers are quiet: it asks about the next symbols
no search has needed yet, exactly as expansion would, and stores what was completely
answered (memory.py, graph/index/sqlite/learned.py). A later search reads those relations
instead of waiting for a server, so its expansion no longer depends on how busy the
server is. Rounds go through the symbols in id order; the caller keeps the cursor.
"""

from __future__ import annotations

from dataclasses import dataclass

import anyio.to_thread

from lensmux.graph.search.catalog import Catalog, Node, symbol_node
from lensmux.graph.search.config import SearchConfig
from lensmux.graph.search.engine import SearchIndex
from lensmux.graph.search.expansion.expand import ask_about
from lensmux.graph.search.expansion.memory import GraphMemory
from lensmux.graph.search.gateway import LspCalls, LspGateway

__all__ = ["LearnRound", "learn_round"]

# A quiet server gets time to answer: nobody waits on these requests.
_MIN_TIMEOUT_S = 10.0


@dataclass(frozen=True, slots=True)
class LearnRound:
    """What one round did; `after` is the cursor for the next round, `done` when nothing was left."""

    asked: int
    stored: int
    after: int
    done: bool


async def learn_round(
    index: SearchIndex, gateway: LspGateway, config: SearchConfig, *, after: int, limit: int
) -> LearnRound:
    """Ask about up to `limit` unlearned symbols with ids above `after`, and store the complete answers."""
    store = index.store
    ids = await anyio.to_thread.run_sync(store.unlearned_symbols, after, limit)
    if not ids:
        return LearnRound(0, 0, after, done=True)
    catalog = Catalog(store, store.root)

    def nodes() -> list[Node]:
        records = (catalog.symbol(i) for i in ids)
        return [symbol_node(r) for r in records if r is not None]

    lsp = LspCalls(
        gateway, store.root, max_in_flight=config.learn_in_flight, timeout=max(config.request_timeout_s, _MIN_TIMEOUT_S)
    )
    stored = await ask_about(
        await anyio.to_thread.run_sync(nodes),
        catalog,
        lsp,
        GraphMemory(store, catalog, config.max_neighbors),
        max_neighbors=config.max_neighbors,
        max_derived=config.max_derived_calls,
        callable_references=config.callable_references,
    )
    return LearnRound(len(ids), stored, ids[-1], done=False)
