"""Load against real clangd: 10 editors on one C project, reading and editing at once.

Each client opens two of the three benchmark files and sends a weighted mix
of hover, definition, references and documentSymbol at the names of real
symbols (from documentSymbol); the first clients also own one file each and
edit it every few requests. Edits append a comment at the end of the file:
the text changes (every cached answer about the workspace goes stale, clangd
rebuilds the AST) but no symbol moves, so every answer can still be compared
with the reference answer of its question, taken from one client alone
before the load. An answer equal to another question's distinctive reference
is misrouted; one equal to none is counted as unexpected, with samples.

The same load runs against a daemon without the response cache (baseline)
and one with it; then `cache_figure` times the cached references answer.
"""

from __future__ import annotations

import logging
import random
from collections import Counter
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any

import anyio
from support.daemon_proc import DaemonProc
from support.lspclient import LspClient, LspClientError, path_uri

from bench.fetch_corpus import Corpus
from bench.mux import cache_figure
from bench.mux.clangd_queries import DEFINITION, HOVER, REFERENCES, REQUEST_TIMEOUT, SYMBOLS, Query
from bench.mux.load_lanes import Ask, Edit, Lane, Step, Verdict, cache_delta, run_phase
from bench.mux.load_sites import Site, canonical, open_site, pick_queries, reference_answers

log = logging.getLogger(__name__)

# What an editor asks most: hover as the cursor moves, the outline, then navigation.
WEIGHTS = {HOVER: 0.40, SYMBOLS: 0.20, DEFINITION: 0.25, REFERENCES: 0.15}
FILES_PER_CLIENT = 2
TRIVIAL_ANSWERS = frozenset({"null", "[]"})


class Judge:
    """Classifies answers against the reference answers of all questions."""

    def __init__(self, references: Mapping[Query, str]) -> None:
        self.references = dict(references)
        owners = Counter(references.values())
        # An answer identifies its question only if no other question has the same one.
        self.distinctive = {a: q for q, a in references.items() if owners[a] == 1 and a not in TRIVIAL_ANSWERS}
        self.unexpected_samples: list[str] = []

    def check_for(self, query: Query, corpus: Corpus) -> Callable[[Any], Verdict]:
        """The check of one ask of `query` on `corpus`."""

        def check(result: Any) -> Verdict:
            answer = canonical(result, corpus)
            if answer == self.references[query]:
                return "ok"
            other = self.distinctive.get(answer)
            if other is not None and other != query:
                return "misrouted"
            if len(self.unexpected_samples) < 5:
                self.unexpected_samples.append(f"{query}: {answer[:300]}")
            return "unexpected"

        return check


class AppendingEditor:
    """The one client allowed to edit a file: appends comment lines at its end."""

    def __init__(self, corpus: Corpus, relative: str) -> None:
        self.uri = path_uri(corpus.path(relative))
        self.text = corpus.path(relative).read_text(encoding="utf-8")
        self.version = 1
        self.count = 0

    async def apply(self, client: LspClient) -> None:
        """One incremental didChange inserting a line at the end."""
        lines = self.text.split("\n")
        end = {"line": len(lines) - 1, "character": len(lines[-1].encode("utf-16-le")) // 2}
        self.count += 1
        insert = f"/* lensmux load edit {self.count} */\n"
        # Text and version advance before the send: a second worker of this lane
        # editing meanwhile computes its position from the text the server will have.
        self.text += insert
        self.version += 1
        await client.change_incremental(self.uri, self.version, {"start": end, "end": end}, insert)


def client_files(client_no: int, files: Sequence[str]) -> list[str]:
    """The files client `client_no` opens; client i < len(files) opens (and owns) files[i] first."""
    return [files[(client_no + k) % len(files)] for k in range(min(FILES_PER_CLIENT, len(files)))]


def clangd_script(
    client_no: int,
    corpus: Corpus,
    queries: Sequence[Query],
    judge: Judge,
    *,
    requests: int,
    edit_every: int,
    seed: int,
) -> list[Step]:
    """One client's requests (weighted by method, over its open files) and its edits."""
    rng = random.Random(seed * 7919 + client_no)
    files = client_files(client_no, corpus.files)
    pools = {m: [q for q in queries if q.method == m and q.file in files] for m in WEIGHTS}
    methods = [m for m in WEIGHTS if pools[m]]
    weights = [WEIGHTS[m] for m in methods]
    editor = AppendingEditor(corpus, files[0]) if client_no < len(corpus.files) and edit_every > 0 else None
    steps: list[Step] = []
    for seq in range(requests):
        if editor is not None and seq and seq % edit_every == 0:
            steps.append(Edit(editor.apply))
        query = rng.choice(pools[rng.choices(methods, weights)[0]])
        steps.append(Ask(query.method, query.params(corpus), judge.check_for(query, corpus)))
    return steps


@asynccontextmanager
async def load_clients(site: Site, count: int) -> AsyncIterator[list[LspClient]]:
    """`count` editors connected to the site's clangd socket, each with its files open."""
    async with AsyncExitStack() as stack:
        clients: list[LspClient] = []
        for i in range(count):
            client = await stack.enter_async_context(LspClient.over_unix(site.socket, name=f"load-{site.name}-{i}"))
            await client.initialize(site.corpus.root, timeout=REQUEST_TIMEOUT)
            for relative in client_files(i, site.corpus.files):
                await client.open(site.corpus.path(relative), "c")
            clients.append(client)
        yield clients
        for client in clients:
            try:
                await client.shutdown_and_exit(timeout=30)
            except LspClientError as exc:
                log.warning("%s: shutdown failed: %s", client.name, exc)


async def load_phase(
    site: Site,
    queries: Sequence[Query],
    judge: Judge,
    *,
    clients: int,
    requests: int,
    inflight: int,
    edit_every: int,
    seed: int,
) -> dict[str, Any]:
    """Every client runs its script at once; figures, accounting and cache hits of the phase."""
    async with load_clients(site, clients) as conns:
        lanes = [
            Lane(
                c.name,
                c,
                clangd_script(i, site.corpus, queries, judge, requests=requests, edit_every=edit_every, seed=seed),
            )
            for i, c in enumerate(conns)
        ]
        pids = {"daemon": site.daemon.pid}
        clangd = site.clangd_pid()
        if clangd is not None:
            pids["clangd"] = clangd
        before = await anyio.to_thread.run_sync(site.cache_methods)
        out = await run_phase(lanes, inflight=inflight, deadline_s=REQUEST_TIMEOUT, pids=pids, rss_pid=site.daemon.pid)
        out["cache"] = cache_delta(before, await anyio.to_thread.run_sync(site.cache_methods))
    out["clients"] = clients
    out["requests_per_client"] = requests
    out["unexpected_samples"] = list(judge.unexpected_samples)
    log.info("clangd %s: %.1f req/s, accounting %s", site.name, out["throughput_per_s"], out["accounting"])
    return out


async def run(
    daemons: Mapping[str, tuple[DaemonProc, Corpus]],
    *,
    clients: int,
    requests: int,
    inflight: int,
    edit_every: int,
    per_file: int,
    cache_reps: int,
    index_quiet_s: float,
    seed: int,
) -> dict[str, Any]:
    """Both sites ("nocache" is the baseline, "cache" what users get): load each, then the cache figure."""
    async with AsyncExitStack() as stack:
        sites: dict[str, Site] = {}
        # One at a time: two clangd processes indexing at once would share two cores with everyone else.
        for name in ("nocache", "cache"):
            daemon, corpus = daemons[name]
            sites[name] = await stack.enter_async_context(open_site(name, daemon, corpus, quiet_s=index_quiet_s))
        base = sites["nocache"]
        queries = await pick_queries(base, per_file)
        references = await reference_answers(base, queries)
        judge_counts = Counter(q.method for q in queries)
        phases: dict[str, Any] = {}
        for name in ("nocache", "cache"):
            phases[name] = await load_phase(
                sites[name],
                queries,
                Judge(references),
                clients=clients,
                requests=requests,
                inflight=inflight,
                edit_every=edit_every,
                seed=seed,
            )
        figure = await cache_figure.run(sites["cache"], sites["nocache"], queries, Judge(references), cache_reps)
        return {
            "corpus": base.corpus.description,
            "files": list(base.corpus.files),
            "clients": clients,
            "requests_per_client": requests,
            "inflight_per_client": inflight,
            "edit_every": edit_every,
            "editing_clients": min(clients, len(base.corpus.files)) if edit_every > 0 else 0,
            "weights": WEIGHTS,
            "queries": {m: judge_counts[m] for m in WEIGHTS},
            "index_ready_s": {name: s.index_ready_s for name, s in sites.items()},
            "phases": phases,
            "cache_figure": figure,
        }
