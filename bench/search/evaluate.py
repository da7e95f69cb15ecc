"""Hybrid search quality and speed on real projects, with no hand labels.

For each project (corpus.py: pinned sdist, docstrings stripped, one query
per docstring's first sentence, the function it came from is the answer):

1. a real daemon (daemon_search.py) indexes the stripped copy, answers six
   unrelated warm-up queries, then every query three times through
   `lensmux/hybridSearch` (top_k 10, one at a time): the full pipeline with live pyright
   expansion (the measured pass), the same again (response cache warm), and with
   `max_graph_depth = 0` (stage 1 alone, through the daemon);
2. with the daemon stopped, keyword-only and vector-only run in process over its index
   (offline.py);
3. MRR@10, hit@1 and hit@10 per strategy, latency percentiles, per-stage timing.

    python -m bench.search.evaluate requests tornado          # ≈ 10-20 min on 2 cores
    python -m bench.search.evaluate flask --label tuning-check

Output: bench/out/search/eval-<project>[-<label>].json (every query's ranks and timing)
and a markdown table per project on stdout.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from bench import CHECKOUT
from bench.daemon_launch import BenchDaemonError
from bench.runner import arg_parser
from bench.search.corpus import OUT_DIR, PROJECTS, CorpusError, Prepared, load_or_prepare, summary
from bench.search.daemon_search import (
    SearchRecord,
    config_text,
    index_root,
    run_queries,
    search_daemon,
    wait_learned,
    warm_up,
)
from bench.search.offline import OfflineIndex
from bench.search.ranking import EvalItem, group_queries, rank_of, sample, score, summarise_latency
from bench.stats import code_state, machine

log = logging.getLogger(__name__)

STAGES = ("seeds", "expansion", "graph", "clustering", "rerank")
STRATEGIES = ("keyword", "vector", "stage1", "full")


def _ranks(items: Sequence[EvalItem], ranked: Sequence[Sequence[tuple[str, int]]]) -> list[int | None]:
    return [rank_of(item, r) for item, r in zip(items, ranked, strict=True)]


def _latency(records: Sequence[SearchRecord]) -> dict[str, Any]:
    return {
        "end_to_end_ms": summarise_latency([r.wall_ms for r in records]),
        "engine_ms": summarise_latency([r.execution_ms for r in records]),
        "stages_ms": {stage: summarise_latency([r.timing.get(stage, 0.0) for r in records]) for stage in STAGES},
        "degraded": sum(1 for r in records if r.degraded),
    }


def _warnings(records: Sequence[SearchRecord]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for record in records:
        for warning in record.warnings:
            key = warning.split(" (", 1)[0][:90]
            counts[key] = counts.get(key, 0) + 1
    return dict(sorted(counts.items(), key=lambda kv: -kv[1])[:10])


def displacement(
    stage1: Sequence[SearchRecord], full: Sequence[SearchRecord], ranks: Mapping[str, Sequence[int | None]]
) -> dict[str, Any]:
    """What expansion did to stage 1's order: the answer's rank, the top seed, seeds pushed down and by what."""
    answer = {"better": 0, "worse": 0, "same": 0}
    for before, after in zip(ranks["stage1"], ranks["full"], strict=True):
        b, a = before or 99, after or 99
        answer["better" if a < b else "worse" if a > b else "same"] += 1
    top_kept = top_to_seed = top_to_expanded = 0
    lowered = lowered_by_expanded = 0
    for s1, fu in zip(stage1, full, strict=True):
        if not s1.ids or not fu.ids:
            continue
        if fu.ids[0] == s1.ids[0]:
            top_kept += 1
        elif fu.seeds[0]:
            top_to_seed += 1
        else:
            top_to_expanded += 1
        position = {key: i for i, key in enumerate(fu.ids)}
        expanded_only = {key for key, seed in zip(fu.ids, fu.seeds, strict=True) if not seed}
        for i, key in enumerate(s1.ids[:10]):
            j = position.get(key, len(fu.ids))
            if j > i:
                lowered += 1
                if any(k in expanded_only for k in fu.ids[:j]):
                    lowered_by_expanded += 1
    return {
        "answer_rank_vs_stage1": answer,
        "top_seed_kept": top_kept,
        "top_seed_replaced_by_seed": top_to_seed,
        "top_seed_replaced_by_expanded_node": top_to_expanded,
        "stage1_top10_seeds_lowered": lowered,
        "lowered_with_expansion_only_node_above": lowered_by_expanded,
    }


# Graph-stage ablations through per-request overrides (full pipeline, live expansion):
# PageRank's centrality or the proximity term weighted 0 in the rerank.
GRAPH_ABLATIONS: dict[str, dict[str, Any]] = {
    "no_pagerank": {"ranking_weights": {"w2": 0.0}},
    "no_proximity": {"ranking_weights": {"w3": 0.0}},
}


def evaluate(
    prepared: Prepared,
    search_config: Mapping[str, Any] | None,
    work: Path,
    max_queries: int | None = None,
    *,
    ablate_graph: bool = False,
    learn: bool = False,
    query_adapter: bool = True,
) -> dict[str, Any]:
    """Run one project through the daemon and the offline strategies; every figure in one dict."""
    from lensmux.graph.embedding.embedder import Embedder

    items = sample(group_queries(summary_queries(prepared)), max_queries)
    texts = [item.query for item in items]
    root = prepared.root.resolve()
    load_before = os.getloadavg()
    # The query adapter is the daemon's default; off, queries are embedded as the model gives them.
    adapter_text = "" if query_adapter else "\n[daemon.embedding]\nquery_adapter = false\n"
    with search_daemon(work, config_text(search_config) + adapter_text) as daemon:
        indexed = index_root(daemon, root)
        log.info("%s indexed: %s", prepared.project.name, indexed["summary"])
        learned = wait_learned(daemon, root) if learn else None
        if learned is not None:
            log.info("%s: call graph learned: %s", prepared.project.name, learned)
        warm = warm_up(daemon, root)
        started = time.perf_counter()
        full = run_queries(daemon, root, texts)
        full_s = time.perf_counter() - started
        log.info("%s: full pipeline pass done in %.0f s", prepared.project.name, full_s)
        repeat = run_queries(daemon, root, texts)
        stage1_daemon = run_queries(daemon, root, texts, {"max_graph_depth": 0})
        graph_runs = {
            name: run_queries(daemon, root, texts, overrides)
            for name, overrides in (GRAPH_ABLATIONS.items() if ablate_graph else ())
        }
        store_dir = Path(indexed["status"]["store_dir"])
    load_after = os.getloadavg()
    embedder = Embedder.open_default()
    offline = OfflineIndex(store_dir, root, embedder)
    try:
        keyword = [offline.keyword(q) for q in texts]
        vector = [offline.vector(q) for q in texts]
    finally:
        offline.close()
    ranks = {
        "keyword": _ranks(items, keyword),
        "vector": _ranks(items, vector),
        "stage1": _ranks(items, [r.ranked for r in stage1_daemon]),
        "full": _ranks(items, [r.ranked for r in full]),
    }
    graph_quality = {name: score(_ranks(items, [r.ranked for r in runs])) for name, runs in graph_runs.items()}
    changed = sum(1 for a, b in zip(full, repeat, strict=True) if a.ids != b.ids)
    return {
        "project": summary(prepared) | {"items": len(items), "max_queries": max_queries},
        "search_config": dict(search_config or {}),
        "query_adapter": query_adapter,
        "engine_defaults": engine_defaults(),
        "index": indexed,
        "learning": learned,
        "loadavg_before": load_before,
        "loadavg_after": load_after,
        "quality": {name: score(r) for name, r in ranks.items()},
        "graph_ablations": graph_quality,
        "latency": {
            "first_pass": _latency(full),
            "repeat_pass": _latency(repeat),
            "stage1_through_daemon": _latency(stage1_daemon),
            "warmup": _latency(warm),
            "vector_in_process_ms": summarise_latency(offline.vector_ms),
        },
        "answers_changed_on_repeat": changed,
        "expansion_effect": displacement(stage1_daemon, full, ranks),
        "warnings_full": _warnings(full),
        "per_query": [
            {
                "query": item.query,
                "answers": [f"{a.path}:{a.qualname}:{a.def_line}" for a in item.answers],
                "ranks": {name: ranks[name][i] for name in STRATEGIES},
                "full": full[i].as_dict(),
                "stage1_ids": stage1_daemon[i].ids,
                "stage1_timing": stage1_daemon[i].timing,
                "repeat_wall_ms": repeat[i].wall_ms,
            }
            for i, item in enumerate(items)
        ],
    }


def engine_defaults() -> dict[str, Any]:
    """The engine's SearchConfig defaults the daemon ran with (what `[daemon.search]` did not set)."""
    from lensmux.graph.search import SearchConfig

    out = dataclasses.asdict(SearchConfig())
    out.pop("generic_names", None)
    return out


def summary_queries(prepared: Prepared) -> list[dict[str, Any]]:
    """The prepared queries as plain dicts (what group_queries reads)."""
    return [
        {"query": q.query, "path": q.path, "qualname": q.qualname, "first_line": q.first_line, "def_line": q.def_line}
        for q in prepared.queries
    ]


def markdown(result: Mapping[str, Any]) -> str:
    """The quality table and latency lines of one project."""
    p = result["project"]
    lines = [
        f"**{p['project']} {p['version']}** ({p['py_files']} .py files, {p['py_lines']:,} lines"
        + (f"; {p['c_files']} C files, {p['c_lines']:,} lines, the queries from the C" if p.get("c_files") else "")
        + f"; {p['items']} distinct queries from {p['queries']} docstrings)",
        "",
        "| strategy | MRR@10 | hit@1 | hit@10 |",
        "| --- | ---: | ---: | ---: |",
    ]
    names = {
        "keyword": "keyword only (BM25)",
        "vector": "vector only (MiniLM, hnswlib)",
        "stage1": "stage 1: fused seeds, no expansion",
        "full": "full pipeline (live expansion)",
    }
    for key in STRATEGIES:
        q = result["quality"][key]
        lines.append(f"| {names[key]} | {q['mrr@10']:.3f} | {q['hit@1']:.3f} | {q['hit@10']:.3f} |")
    for key, q in result.get("graph_ablations", {}).items():
        lines.append(
            f"| full pipeline, {key.replace('_', ' ')} | {q['mrr@10']:.3f} | {q['hit@1']:.3f} | {q['hit@10']:.3f} |"
        )
    for label, key in (("first pass", "first_pass"), ("repeat pass", "repeat_pass")):
        lat = result["latency"][key]
        e2e = lat["end_to_end_ms"]
        stages = ", ".join(f"{s} {lat['stages_ms'][s]['p50']:.0f}/{lat['stages_ms'][s]['p95']:.0f}" for s in STAGES)
        lines.append("")
        lines.append(
            f"{label}: end to end p50 {e2e['p50']:.0f} ms, p95 {e2e['p95']:.0f} ms; "
            f"stages p50/p95 ms: {stages}; degraded {lat['degraded']}"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Evaluate the named projects."""
    parser = arg_parser(__doc__)
    parser.add_argument("projects", nargs="+", help=f"any of {sorted(PROJECTS)}")
    parser.add_argument("--search-config", default="", help="JSON of a [daemon.search] table (default: none)")
    parser.add_argument("--label", default="", help="suffix of the output file names")
    parser.add_argument("--max-queries", type=int, help="a quick look: this many queries, evenly spaced (default all)")
    parser.add_argument("--index-label", default="", help="run in the daemon directory of index_set --label")
    parser.add_argument("--ablate-graph", action="store_true", help="also run without PageRank, without proximity")
    parser.add_argument("--learn", action="store_true", help="let the daemon learn the call graph before the queries")
    parser.add_argument(
        "--no-query-adapter", action="store_true", help="daemon with [daemon.embedding] query_adapter off"
    )
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    search_config = json.loads(args.search_config) if args.search_config else None
    info = machine(pyright=True)
    code = code_state(CHECKOUT)
    for name in args.projects:
        try:
            prepared = load_or_prepare(name)
            work = OUT_DIR / "daemon" / (f"{name}-{args.index_label}" if args.index_label else name)
            result = evaluate(
                prepared,
                search_config,
                work,
                args.max_queries,
                ablate_graph=args.ablate_graph,
                learn=args.learn,
                query_adapter=not args.no_query_adapter,
            )
        except (CorpusError, BenchDaemonError) as exc:
            print(f"bench.search.evaluate: {name}: {exc}", file=sys.stderr)
            return 1
        result["machine"] = info
        result["code"] = code
        suffix = f"-{args.label}" if args.label else ""
        out = OUT_DIR / f"eval-{name}{suffix}.json"
        out.write_text(json.dumps(result, indent=1))
        print(markdown(result))
        print(f"\n(saved {out})\n", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
