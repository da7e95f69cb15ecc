"""Learning the call graph ahead of searches, a few symbols at a time.

The daemon runs a round whenever its servers are quiet: it asks about the next symbols
no search has needed yet, exactly as expansion would, and stores what was completely
answered (memory.py, graph/index/sqlite/learned.py). A later search reads those relations
instead of waiting for a server, so its expansion no longer depends on how busy the
server is. Rounds go through the symbols in id order; the caller keeps the cursor, and may
name symbols to ask about first (those a search had to ask the servers about live).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
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
    # Of the symbols asked first (`first`), those this round took: asked, or found learned or gone.
    took: tuple[int, ...] = ()
    # Of `first`, those it looked up and left to another lane (their file is in other languages).
    others: tuple[int, ...] = ()


async def learn_round(
    index: SearchIndex,
    gateway: LspGateway,
    config: SearchConfig,
    *,
    after: int,
    limit: int,
    first: Sequence[int] = (),
    languages: Collection[str] | None = None,
) -> LearnRound:
    """Ask about up to `limit` unlearned symbols: those of `first` not learned yet, then ids above `after`.

    With `languages` (one server's), only symbols of files in those languages are asked
    about, the ones of `first` included; the others of `first` are left to their own lane.
    `first` does not move the cursor.
    """
    store = index.store
    catalog = Catalog(store, store.root)

    def queued() -> tuple[list[tuple[int, Node | None]], tuple[int, ...]]:
        """This lane's queued symbols (None: its file was rewritten since, dropped), and the other lanes' it saw."""
        out: list[tuple[int, Node | None]] = []
        others: list[int] = []
        for symbol in dict.fromkeys(first):
            record = catalog.symbol(symbol)
            node = symbol_node(record) if record is not None else None
            if node is None or languages is None or catalog.language(node.path) in languages:
                out.append((symbol, node))
            else:
                others.append(symbol)
            if len(out) == limit:
                break
        return out, tuple(others)

    mine, others = await anyio.to_thread.run_sync(queued) if first else ([], ())
    took = tuple(symbol for symbol, _ in mine)
    learned = await anyio.to_thread.run_sync(store.recall_learned, took) if took else {}
    wanted = [node for symbol, node in mine if node is not None and symbol not in learned]
    cursor: list[int] = []
    if len(wanted) < limit:
        cursor = await anyio.to_thread.run_sync(store.unlearned_symbols, after, limit - len(wanted), languages)
        if not cursor and not wanted:
            return LearnRound(0, 0, after, done=True, took=took, others=others)
    asked = {node.symbol_id for node in wanted}

    def nodes() -> list[Node]:
        records = (catalog.symbol(i) for i in cursor if i not in asked)
        return wanted + [symbol_node(r) for r in records if r is not None]

    lsp = LspCalls(
        gateway, store.root, max_in_flight=config.learn_in_flight, timeout=max(config.request_timeout_s, _MIN_TIMEOUT_S)
    )
    round_nodes = await anyio.to_thread.run_sync(nodes)
    stored = await ask_about(
        round_nodes,
        catalog,
        lsp,
        GraphMemory(store, catalog, config.max_neighbors),
        max_neighbors=config.max_neighbors,
        max_derived=config.max_derived_calls,
        callable_references=config.callable_references,
    )
    # The cursor has nothing left once a round that asked it for symbols got none.
    done = not cursor and len(wanted) < limit
    return LearnRound(len(round_nodes), stored, cursor[-1] if cursor else after, done=done, took=took, others=others)
