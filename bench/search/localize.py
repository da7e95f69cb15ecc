"""Commit localization: does the search find the functions a commit changed, from its message?

For each mined project (localize_mine.py) one daemon (private XDG directories under
bench/out/localize/daemon/<project>/) indexes one local clone
(bench/out/localize/trees/<project>/), checked out at each commit's parent in turn,
oldest first: `lensmux index --wait` then re-reads only the files that changed since
the previous parent. With `--learn` (the default) the daemon's learner then completes
the call graph of the changed tree before any query, as it would on a quiet machine.
Each commit's message is asked once per pipeline stage through `lensmux/hybridSearch`
(top_k 20; recall@10 is read from the first 10 of those 20), every stage switched by
the request's `config_overrides` on top of the daemon's shipped `[daemon.search]`:

- `stage1`: depth 0, the fused seeds (anchors, BM25-style keyword, vectors);
- `expansion`: + the call hierarchy and references (depth 1, the shipped 5 seeds),
  reranked by text and proximity only (PageRank weight 0), Louvain's filter off
  (resolution 1e-6: one community per connected part, so none is dropped), and this and
  the next two stages without the neighbour fill (`neighbour_from` 0);
- `louvain`: + Louvain at its shipped resolution, which drops communities linked to
  no seed, still without PageRank;
- `nofill`: + personalised PageRank, i.e. the shipped pipeline (its neighbour fill is off);
- `full`: + graph neighbours of the first 10 functions in every other place after the
  first 10 (graph/search/answer/neighbours.py, `neighbour_from` 10);
- `depth2` (`--depth2`): the full pipeline at depth 2, where Louvain can drop nodes.

Besides, in process over a copy of the same index (localize_index.py): `vector`
(vector only) and `keyword` (lensmux's keyword search alone), and `bm25`, the
baseline of the docstring benchmark (bm25.py) over perfect function chunks of the
same files: Python functions by `ast`, C/C++ ones as the index's clangd symbols.

    python -m bench.search.localize flask jq                 # after localize_mine
    python -m bench.search.localize --all --depth2           # every mined project
    python -m bench.search.localize flask --max-commits 5 --label quick

Output: bench/out/localize/run-<project>[-<label>].json, written after each commit
(`--resume` skips commits already there), and a markdown table on stdout.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from support.daemon_proc import DaemonProc

from bench import CHECKOUT
from bench.daemon_launch import BenchDaemonError
from bench.runner import arg_parser
from bench.search.bm25 import Bm25, Document, python_documents
from bench.search.daemon_search import config_text, index_root, search, search_daemon
from bench.search.localize_git import GitError, checkout, shared_clone, sync_tree
from bench.search.localize_index import DB_NAME, SnapshotFailed, SnapshotIndex, snapshot
from bench.search.localize_mine import OUT_DIR
from bench.search.localize_projects import answer_language
from bench.search.localize_reach import graph_reach
from bench.search.localize_score import DEPTH, aggregate, markdown_table, score, targets_of
from bench.stats import code_state, machine

log = logging.getLogger(__name__)

# Per-request overrides of each daemon stage; the daemon's own [daemon.search] is the shipped one.
NO_LOUVAIN = 1e-6
STAGES: dict[str, dict[str, Any]] = {
    "stage1": {"max_graph_depth": 0},
    "expansion": {"ranking_weights": {"w2": 0.0}, "clustering_resolution": NO_LOUVAIN, "neighbour_from": 0},
    "louvain": {"ranking_weights": {"w2": 0.0}, "neighbour_from": 0},
    "nofill": {"neighbour_from": 0},
    "full": {"neighbour_from": 10},
}
DEPTH2: dict[str, dict[str, Any]] = {"depth2": {"max_graph_depth": 2}}
LABELS = {
    "bm25": "BM25 (perfect chunks)",
    "keyword": "keyword only",
    "vector": "vector only",
    "stage1": "stage 1",
    "expansion": "+ expansion",
    "louvain": "+ Louvain",
    "nofill": "+ PageRank, no neighbours",
    "full": "+ neighbours (full)",
    "depth2": "full, depth 2",
}


class LocalizeError(Exception):
    """A project could not be run."""


def wait_learned(daemon: DaemonProc, root: Path, timeout: float) -> dict[str, Any]:
    """Wait until the learner has gone over the changed tree (it starts within moments of an index run's end)."""
    started = time.perf_counter()
    time.sleep(1.5)  # the state may still read the previous pass's "up to date"
    while True:
        status: dict[str, Any] = daemon.call("lensmux/indexStatus", {"root": str(root)})
        graph: dict[str, Any] = status.get("graph") or {}
        waited = time.perf_counter() - started
        if graph.get("state") == "up to date" or waited > timeout:
            return {**graph, "wall_s": round(waited, 1), "timed_out": waited > timeout}
        time.sleep(1.0)


def bm25_documents(root: Path, index: SnapshotIndex) -> list[Document]:
    """Perfect function chunks of the files the index reads: Python by `ast`, C/C++ the index's definitions."""
    docs: list[Document] = []
    files = index.files()
    for path in sorted(p for p, lang in files.items() if lang == "python"):
        docs += python_documents(path, (root / path).read_text(encoding="utf-8", errors="replace"))
    texts: dict[str, list[str]] = {}
    for path, first, last in index.callables(lang for lang in set(files.values()) if lang in {"c", "cpp"}):
        if path not in texts:
            texts[path] = (root / path).read_text(encoding="utf-8", errors="replace").split("\n")
        text = "\n".join(texts[path][first : last + 1])
        if "{" in text:  # a definition, not a prototype
            docs.append(Document(path, first, text))
    return docs


def indexed_share(index: SnapshotIndex, answers: Sequence[Mapping[str, Any]]) -> int:
    """How many answers the index holds as a symbol starting where the function does."""
    starts = index.symbol_starts(str(a["path"]) for a in answers)
    return sum(1 for a in answers if any(a["first_line"] <= s <= a["def_line"] for s in starts.get(str(a["path"]), ())))


def lost_files(root: Path, index: SnapshotIndex, changed: Sequence[str]) -> list[str]:
    """Files of the last change that are on disk, in a language with a server, yet not in the index.

    A check on the index's freshness (see localize_git.sync_tree); files the index
    skips on purpose (generated, over the size cap) are listed too, so read it as a hint.
    """
    known = index.files()
    return sorted(
        path
        for path in changed
        if path not in known
        and (root / path).is_file()
        and answer_language(path) is not None
        and not (root / path).is_symlink()
    )


class Runner:
    """One project's commits through one daemon."""

    def __init__(self, mined: Mapping[str, Any], args: Any) -> None:
        self.mined = mined
        self.args = args
        self.name = str(mined["project"])
        self.stages = {**STAGES, **(DEPTH2 if args.depth2 else {})}
        repo = Path(args.repo or mined["repo"])
        self.root = shared_clone(repo, OUT_DIR / "trees" / self.name).resolve()
        self.snap = OUT_DIR / "snapshot" / self.name
        self._bm25_cache: dict[str, Counter[str]] = {}
        self._watched = False

    def one(self, daemon: DaemonProc, commit: Mapping[str, Any], embedder: Any) -> dict[str, Any]:
        """Check out the parent, index, learn, ask every stage; the commit's figures."""
        timings: dict[str, float] = {}
        clock = time.perf_counter()
        if self._watched:
            changed = sync_tree(self.root, str(commit["parent"]))
        else:  # the daemon watches a root only after its first index run: a checkout is safe
            checkout(self.root, str(commit["parent"]))
            changed = []
        indexed = index_root(daemon, self.root)
        self._watched = True
        timings["index_s"] = indexed["wall_s"]
        learned = wait_learned(daemon, self.root, self.args.learn_timeout) if self.args.learn else None
        query, targets = str(commit["query"]), targets_of(commit["answers"])
        ranked: dict[str, list[tuple[str, int]]] = {}
        records: dict[str, dict[str, Any]] = {}
        for stage, overrides in self.stages.items():
            record = search(daemon, self.root, query, overrides, top_k=DEPTH)
            ranked[stage] = record.ranked
            records[stage] = {
                "ids": record.ids,
                "seeds": record.seeds,
                "neighbours": record.neighbours,
                "wall_ms": record.wall_ms,
                "timing": record.timing,
                "degraded": record.degraded,
                "warnings": record.warnings,
            }
        timings["search_s"] = round(sum(r["wall_ms"] for r in records.values()) / 1000, 2)
        started = time.perf_counter()
        snapshot(Path(indexed["status"]["store_dir"]), self.snap)
        index = SnapshotIndex(self.snap, self.root, embedder)
        try:
            ranked["vector"] = index.vector(query, DEPTH)
            ranked["keyword"] = index.keyword(query, DEPTH)
            ranked["bm25"] = Bm25(bm25_documents(self.root, index), self._bm25_cache).search(query, DEPTH)
            in_index = indexed_share(index, commit["answers"])
            lost = lost_files(self.root, index, changed)
            reach = graph_reach(
                self.snap / DB_NAME, targets, score(targets, ranked["stage1"])["ranks"], ranked["stage1"]
            )
        finally:
            index.close()
        timings["offline_s"] = round(time.perf_counter() - started, 2)
        timings["total_s"] = round(time.perf_counter() - clock, 2)
        scores = {name: score(targets, r) for name, r in ranked.items()}
        # Which answers in the full pipeline's first 20 only expansion found (no stage-1 seed).
        full_ids = records["full"]["ids"]
        seeds = records["full"]["seeds"]
        expansion_only = sum(
            1 for rank in scores["full"]["ranks"] if rank is not None and rank <= len(full_ids) and not seeds[rank - 1]
        )
        placed = records["full"]["neighbours"]
        neighbour_answers = sum(
            1 for rank in scores["full"]["ranks"] if rank is not None and rank <= len(placed) and placed[rank - 1]
        )
        return {
            "sha": commit["sha"],
            "parent": commit["parent"],
            "answers": len(targets),
            "answers_indexed": in_index,
            "changed_files_not_indexed": lost,
            "scores": scores,
            "ranked": {k: [f"{p}:{line}" for p, line in v] for k, v in ranked.items()},
            "daemon": records,
            "expansion_only_answers_in_full": expansion_only,
            "neighbour_answers_in_full": neighbour_answers,
            "graph_reach": reach,
            "index_summary": indexed["summary"],
            "learning": learned,
            "timings": timings,
            "loadavg": os.getloadavg(),
        }

    def run(self, out: Path, previous: Mapping[str, Any] | None) -> dict[str, Any]:
        """Every commit (resuming from `previous`), saving after each one."""
        from lensmux.graph.embedding.embedder import Embedder

        commits = list(self.mined["commits"])[: self.args.max_commits]
        done = {c["sha"]: c for c in (previous or {}).get("commits", [])}
        result: dict[str, Any] = {
            "project": self.name,
            "pin": self.mined["pin"],
            "root": str(self.root),
            "stages": self.stages,
            "learn": self.args.learn,
            "machine": machine(pyright=True),
            "code": code_state(CHECKOUT),
            "started": time.strftime("%Y-%m-%d %H:%M:%S %z"),
            "loadavg_start": os.getloadavg(),
            "commits": [],
        }
        embedder = Embedder.open_default()
        started = time.perf_counter()
        with search_daemon(OUT_DIR / "daemon" / self.name, config_text()) as daemon:
            for i, commit in enumerate(commits, 1):
                if commit["sha"] in done:
                    result["commits"].append(done[commit["sha"]])
                    continue
                figures = self.one(daemon, commit, embedder)
                result["commits"].append(figures)
                s = figures["scores"]
                log.info(
                    "%s %d/%d %s: answers %d (%d indexed); R@20 bm25 %.2f vector %.2f stage1 %.2f full %.2f; %s",
                    self.name, i, len(commits), commit["sha"][:10], figures["answers"], figures["answers_indexed"],
                    s["bm25"]["recall@20"], s["vector"]["recall@20"], s["stage1"]["recall@20"],
                    s["full"]["recall@20"], figures["timings"],
                )  # fmt: skip
                if figures["changed_files_not_indexed"]:
                    log.warning("%s: changed files not indexed: %s", self.name, figures["changed_files_not_indexed"])
                out.write_text(json.dumps(result, indent=1))
        result["elapsed_s"] = round(time.perf_counter() - started, 1)
        result["loadavg_end"] = os.getloadavg()
        result["quality"] = quality(result["commits"])
        out.write_text(json.dumps(result, indent=1))
        return result


def quality(commits: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, float]]:
    """Mean recall@10, recall@20 and MRR per strategy."""
    names = sorted({name for c in commits for name in c["scores"]})
    return {name: aggregate([c["scores"][name] for c in commits if name in c["scores"]]) for name in names}


def main(argv: list[str] | None = None) -> int:
    """Run the named projects."""
    parser = arg_parser(__doc__)
    parser.add_argument("projects", nargs="*", help="projects mined by localize_mine")
    parser.add_argument("--all", action="store_true", help="every project mined (bench/out/localize/mined-*.json)")
    parser.add_argument("--repo", help="the repository to clone from (default: the one it was mined from)")
    parser.add_argument("--max-commits", type=int, help="a quick look: the first N commits of each project")
    parser.add_argument("--no-learn", dest="learn", action="store_false", help="do not wait for the learned graph")
    parser.add_argument("--learn-timeout", type=float, default=1800, help="seconds to wait for learning per commit")
    parser.add_argument("--depth2", action="store_true", help="also run the full pipeline at depth 2")
    parser.add_argument("--label", default="", help="suffix of the output files")
    parser.add_argument("--resume", action="store_true", help="keep the commits an earlier run of this label did")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    names = sorted(p.name[6:-5] for p in OUT_DIR.glob("mined-*.json")) if args.all else args.projects
    results: dict[str, dict[str, Any]] = {}
    for name in names:
        suffix = f"-{args.label}" if args.label else ""
        out = OUT_DIR / f"run-{name}{suffix}.json"
        try:
            mined = json.loads((OUT_DIR / f"mined-{name}.json").read_text())
            previous = json.loads(out.read_text()) if args.resume and out.is_file() else None
            results[name] = Runner(mined, args).run(out, previous)
        except (OSError, ValueError, BenchDaemonError, GitError, SnapshotFailed, LocalizeError) as exc:
            print(f"bench.search.localize: {name}: {exc}", file=sys.stderr)
            return 1
        print(f"{name}: {json.dumps(results[name]['quality'])} ({results[name]['elapsed_s']} s)", flush=True)
    order = [n for n in LABELS if any(n in r["quality"] for r in results.values())]
    print(markdown_table(results, {n: LABELS[n] for n in order}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
