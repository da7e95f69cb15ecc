"""Train stage 1's learned ranker (graph/search/ranker.py) and measure it held out.

1. Rows: for every project of the docstring benchmark (corpus.py, indexed once by
   index_set.py), every query's fused candidates and their features, exactly as the search
   builds them (seeds.learning_rows), each labelled by whether it is the query's answer.
   Saved under bench/out/search/ranker-rows/ (a re-run reuses them; --fresh rebuilds).
2. Model: pairwise logistic regression in numpy (RankNet with a linear scorer): every
   answer against every other candidate of its query, loss log(1 + exp(-(s_answer - s_other))),
   each query weighing the same within its project and each project the same, an L2 pull
   towards the fusion alone (weight 1 on `convex`, 0 elsewhere), solved by Newton's method
   from that starting point: deterministic, no sampling. The L2 strength is chosen by
   leave-one-project-out over the training projects only.
3. Held out: for each project, a model trained on all the others, scored by running the
   search's own stage 1 with it (quality.stage1_ranks) against the fusion alone.
4. Shipped: the model trained on every project, written to graph/search/ranker_weights.json
   with --write.

With --adapter every query vector is the one a daemon with `[daemon.embedding]
query_adapter = true` makes (the shipped adapter applied to the model's plain vector):
the rows (saved as ranker-rows/<project>-adapter.npz, beside the plain ones), the
training and the held-out scores. Each project is then also scored with the adapter and
the model trained on the other projects' PLAIN rows (train_ranker.json's held-out
weights: what turning the adapter on gives with a ranker trained without it), and with
the weights that ship today (trained on every project, this one included).

    python -m bench.search.train_ranker                       # every project; table on stdout
    python -m bench.search.train_ranker --write               # and ship the all-project model
    python -m bench.search.train_ranker --adapter             # after the plain run: with the adapter

Output: bench/out/search/train_ranker.json (train_ranker-adapter.json with --adapter; per
project: BM25 and both rankings' MRR@10 / hit@10, the held-out model's weights) and
markdown on stdout.
"""

from __future__ import annotations

import dataclasses
import json
import statistics
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy
import numpy.typing as npt

from bench.runner import arg_parser
from bench.search.corpus import OUT_DIR, PROJECTS
from bench.search.offline import NullGateway
from bench.search.quality import SHIPPED, Bench, open_bench, stage1_ranks, use_query_adapter
from bench.search.ranking import score
from lensmux.graph.embedding.model.weights import DEFAULT_MODEL_NAME
from lensmux.graph.embedding.query.query_adapter import QueryAdapter, load_for
from lensmux.graph.search import SearchConfig, Weights
from lensmux.graph.search.candidates.seeds import learning_rows
from lensmux.graph.search.catalog import Catalog
from lensmux.graph.search.config import QueryContext, QuerySettings
from lensmux.graph.search.gateway import LspCalls
from lensmux.graph.search.ranker import FEATURES, RankerModel

__all__ = ["Rows", "collect_rows", "fit", "train"]

ROWS_DIR = OUT_DIR / "ranker-rows"
WEIGHTS_PATH = Path(__file__).resolve().parents[2] / "graph" / "search" / "ranker_weights.json"
# L2 strengths tried by the inner cross-validation.
LAMBDAS = (1e-3, 1e-2, 1e-1)
# Other candidates each answer is paired with, the best by the fusion's score.
NEGATIVES = 50
_NEWTON_STEPS = 30
_CUTOFF = 10
_PRIOR = numpy.array([1.0 if name == "convex" else 0.0 for name in FEATURES])


@dataclass
class Rows:
    """One project's candidates: a feature matrix, labels, and each query's slice of rows."""

    project: str
    matrix: npt.NDArray[numpy.float64]
    labels: npt.NDArray[numpy.bool_]
    starts: npt.NDArray[numpy.int64]  # query i is rows starts[i]:starts[i + 1]

    def queries(self) -> list[tuple[npt.NDArray[numpy.float64], npt.NDArray[numpy.bool_]]]:
        """(matrix, labels) per query."""
        return [(self.matrix[a:b], self.labels[a:b]) for a, b in zip(self.starts[:-1], self.starts[1:], strict=True)]


def collect_rows(bench: Bench, config: SearchConfig) -> Rows:
    """Every query's candidates and features, labelled by the query's answers."""
    store, vectors, root = bench.store, bench.vectors, bench.offline.root
    settings = QuerySettings(_CUTOFF, Weights(), 0, config.clustering_resolution, 0)
    embed = bench.offline.embedder.embed_query
    blocks: list[npt.NDArray[numpy.float64]] = []
    labels: list[bool] = []
    starts = [0]
    for item in bench.items:
        lsp = LspCalls(NullGateway(), root, max_in_flight=1, timeout=1.0)
        ctx = QueryContext(item.query, store, vectors, Catalog(store, root), lsp, embed, config, settings)
        rows = learning_rows(ctx)
        blocks.append(rows.matrix)
        for c in rows.candidates:
            labels.append(any(a.matches(c.node.path, c.node.range.start_line) for a in item.answers))
        starts.append(starts[-1] + len(rows.candidates))
    matrix = numpy.vstack(blocks) if blocks else numpy.zeros((0, len(FEATURES)))
    return Rows(bench.name, matrix, numpy.array(labels, dtype=bool), numpy.array(starts, dtype=numpy.int64))


def _project_pairs(project: Rows) -> tuple[npt.NDArray[numpy.float64], npt.NDArray[numpy.float64]]:
    """(answer - other) rows of one project and their weights, summing to 1 (each query the same).

    The others of a query are its NEGATIVES best candidates by the fusion's score: the ones
    that compete for the first ten places.
    """
    convex = FEATURES.index("convex")
    usable = [(m, y) for m, y in project.queries() if y.any() and (~y).any()]
    diffs: list[npt.NDArray[numpy.float64]] = []
    weights: list[npt.NDArray[numpy.float64]] = []
    for m, y in usable:
        pos = m[y]
        neg = m[~y]
        neg = neg[numpy.lexsort((numpy.arange(len(neg)), -neg[:, convex]))[:NEGATIVES]]
        d = (pos[:, None, :] - neg[None, :, :]).reshape(-1, m.shape[1])
        diffs.append(d)
        weights.append(numpy.full(len(d), 1.0 / (len(d) * len(usable))))
    if not diffs:
        return numpy.zeros((0, len(FEATURES))), numpy.zeros(0)
    return numpy.vstack(diffs), numpy.concatenate(weights)


_PAIRS: dict[int, tuple[npt.NDArray[numpy.float64], npt.NDArray[numpy.float64]]] = {}


def _pairs(rows: Sequence[Rows]) -> tuple[npt.NDArray[numpy.float64], npt.NDArray[numpy.float64]]:
    """Every project's pairs, each project weighing 1 / len(rows)."""
    parts = [_PAIRS.setdefault(id(r), _project_pairs(r)) for r in rows]
    d = numpy.vstack([p[0] for p in parts])
    w = numpy.concatenate([p[1] / len(parts) for p in parts])
    return d, w


_FITS: dict[tuple[frozenset[str], float], npt.NDArray[numpy.float64]] = {}


def fit(rows: Sequence[Rows], l2: float) -> npt.NDArray[numpy.float64]:
    """Pairwise logistic regression, L2 towards the fusion alone, by Newton's method (memoised by projects)."""
    key = (frozenset(r.project for r in rows), l2)
    if key not in _FITS:
        _FITS[key] = _fit(rows, l2)
    return _FITS[key].copy()


def _fit(rows: Sequence[Rows], l2: float) -> npt.NDArray[numpy.float64]:
    d, w = _pairs(rows)
    beta = _PRIOR.copy()
    eye = numpy.eye(len(FEATURES))
    for _ in range(_NEWTON_STEPS):
        margin = d @ beta
        p = 0.5 * (1.0 + numpy.tanh(-0.5 * margin))  # sigmoid(-margin), stable
        gradient = -(d.T @ (w * p)) + l2 * (beta - _PRIOR)
        hessian = (d * (w * p * (1 - p))[:, None]).T @ d + l2 * eye
        step = numpy.linalg.solve(hessian, gradient)
        beta = beta - step
        if float(numpy.abs(step).max()) < 1e-9:
            break
    return beta


def _mrr(rows: Sequence[Rows], beta: npt.NDArray[numpy.float64]) -> float:
    """Mean over projects of MRR@10 of the candidates ranked by beta (ties by row), tiers ignored."""
    per_project = []
    for project in rows:
        total = 0.0
        queries = project.queries()
        for m, y in queries:
            if not y.any():
                continue
            order = numpy.lexsort((numpy.arange(len(y)), -(m @ beta)))
            rank = int(numpy.flatnonzero(y[order])[0]) + 1
            total += 1.0 / rank if rank <= _CUTOFF else 0.0
        per_project.append(total / max(1, len(queries)))
    return statistics.fmean(per_project)


def train(rows: Sequence[Rows], lambdas: Sequence[float] = LAMBDAS) -> tuple[npt.NDArray[numpy.float64], float]:
    """The model for these projects: the L2 strength chosen leaving each of them out in turn."""
    if len(rows) < 3:
        return fit(rows, lambdas[-1]), lambdas[-1]

    def inner(l2: float) -> float:
        return statistics.fmean(_mrr([r], fit([o for o in rows if o is not r], l2)) for r in rows)

    best = max(lambdas, key=lambda l2: (inner(l2), l2))
    return fit(rows, best), best


def rows_path(name: str, adapter: QueryAdapter | None) -> Path:
    """Where a project's rows are kept: the plain ones and the adapter's side by side."""
    return ROWS_DIR / (f"{name}-adapter.npz" if adapter is not None else f"{name}.npz")


def _rows_for(name: str, bench: Bench, config: SearchConfig, fresh: bool, adapter: QueryAdapter | None) -> Rows:
    path = rows_path(name, adapter)
    # Rows made with another adapter file (or none) are rebuilt, never reused.
    made_with = adapter.name if adapter is not None else ""
    if path.is_file() and not fresh:
        data = numpy.load(path)
        saved_with = str(data["adapter"]) if "adapter" in data.files else ""
        if tuple(str(f) for f in data["features"]) == FEATURES and saved_with == made_with:
            return Rows(name, data["matrix"], data["labels"], data["starts"])
    rows = collect_rows(bench, config)
    ROWS_DIR.mkdir(parents=True, exist_ok=True)
    numpy.savez(
        path,
        matrix=rows.matrix,
        labels=rows.labels,
        starts=rows.starts,
        features=numpy.array(FEATURES),
        adapter=numpy.array(made_with),
    )
    return rows


def shipped_adapter() -> QueryAdapter:
    """The adapter a daemon applies with `query_adapter = true` (the default model's shipped file)."""
    adapter = load_for(DEFAULT_MODEL_NAME, None).adapter
    if adapter is None:
        raise SystemExit(f"no usable query adapter ships for {DEFAULT_MODEL_NAME}")
    return adapter


def _plain_models(projects: Sequence[str]) -> dict[str, RankerModel]:
    """The held-out models of the plain run (train_ranker.json), for the adapter run's column (b)."""
    path = OUT_DIR / "train_ranker.json"
    try:
        held_out = json.loads(path.read_text())["held_out"]
    except (OSError, ValueError, KeyError) as exc:
        raise SystemExit(f"--adapter needs the plain run's {path} first: {exc}") from exc
    missing = [p for p in projects if p not in held_out]
    if missing:
        raise SystemExit(f"{path} has no held-out model for {', '.join(missing)}: run the plain one on them")
    return {p: RankerModel.of(held_out[p]["weights"], [o for o in projects if o != p]) for p in projects}


def _without(rows: Rows, features: Sequence[str]) -> Rows:
    """The rows with these features' columns at 0: their weights stay at the prior, 0."""
    if not features:
        return rows
    matrix = rows.matrix.copy()
    matrix[:, [FEATURES.index(f) for f in features]] = 0.0
    return dataclasses.replace(rows, matrix=matrix)


def main(argv: list[str] | None = None) -> int:
    """Rows, held-out models and their search-measured scores, and optionally the shipped weights."""
    parser = arg_parser(__doc__)
    parser.add_argument("projects", nargs="*", default=list(PROJECTS))
    parser.add_argument("--index-label", default="", help="use the indexes kept under this label")
    parser.add_argument("--fresh", action="store_true", help="rebuild the saved rows")
    parser.add_argument("--write", action="store_true", help=f"write the all-project model to {WEIGHTS_PATH.name}")
    parser.add_argument("--label", default="", help="suffix of the output file")
    parser.add_argument("--l2", type=float, nargs="+", default=list(LAMBDAS), help="L2 strengths the inner folds try")
    parser.add_argument(
        "--without", nargs="+", default=[], choices=FEATURES, metavar="FEATURE", help="features kept at weight 0"
    )
    parser.add_argument(
        "--adapter", action="store_true", help="query vectors with the shipped query adapter, as `query_adapter = true`"
    )
    args = parser.parse_args(argv)
    config = dataclasses.replace(SHIPPED, learned_ranker=False)  # the fusion alone: the rows and the baseline
    adapter = shipped_adapter() if args.adapter else None
    plain_models = _plain_models(args.projects) if adapter is not None else {}
    benches: dict[str, Bench] = {}
    rows: dict[str, Rows] = {}
    try:
        for name in args.projects:
            benches[name] = open_bench(name, None, None, args.index_label)
            if adapter is not None:
                use_query_adapter(benches[name], adapter)
            rows[name] = _without(_rows_for(name, benches[name], config, args.fresh, adapter), args.without)
            print(f"{name}: {len(rows[name].starts) - 1} queries, {len(rows[name].labels)} candidates", flush=True)
        results: dict[str, Any] = {}
        for held, bench in benches.items():
            beta, l2 = train([r for n, r in rows.items() if n != held], args.l2)
            model = RankerModel(tuple(float(b) for b in beta), tuple(n for n in rows if n != held))
            learned = dataclasses.replace(config, learned_ranker=True, ranker_model=model)
            results[held] = {
                "bm25": score(bench.baseline),
                "fusion": score(stage1_ranks(bench, config)),
                "learned": score(stage1_ranks(bench, learned)),
                "l2": l2,
                "weights": model.table(),
            }
            if adapter is not None:
                plain = dataclasses.replace(config, learned_ranker=True, ranker_model=plain_models[held])
                results[held]["plain_model"] = score(stage1_ranks(bench, plain))
                results[held]["shipped_weights"] = score(stage1_ranks(bench, SHIPPED))
            f, g = results[held]["fusion"], results[held]["learned"]
            print(
                f"{held}: fusion {f['mrr@10']:.3f} / {f['hit@10']:.2f}, "
                f"learned {g['mrr@10']:.3f} / {g['hit@10']:.2f} (l2 {l2:g})",
                flush=True,
            )
    finally:
        for bench in benches.values():
            bench.close()
    beta, l2 = train(list(rows.values()), args.l2)
    shipped = RankerModel(tuple(float(b) for b in beta), tuple(rows))
    label = args.label or ("adapter" if adapter is not None else "")
    suffix = f"-{label}" if label else ""
    (OUT_DIR / f"train_ranker{suffix}.json").write_text(
        json.dumps(
            {
                "adapter": adapter.name if adapter is not None else None,
                "held_out": results,
                "all": {"l2": l2, "weights": shipped.table()},
            },
            indent=1,
        )
    )
    if args.write:
        WEIGHTS_PATH.write_text(shipped.dumps())
    print(markdown(results, shipped, l2))
    return 0


def markdown(results: dict[str, Any], shipped: RankerModel, l2: float) -> str:
    """Per project, the fusion and the held-out learned ranker; then the shipped coefficients."""
    lines = [
        "| project | fusion MRR@10 / hit@10 | learned (held out) MRR@10 / hit@10 | change |",
        "| --- | ---: | ---: | ---: |",
    ]
    for project, r in results.items():
        f, g = r["fusion"], r["learned"]
        lines.append(
            f"| {project} | {f['mrr@10']:.3f} / {f['hit@10']:.2f} | {g['mrr@10']:.3f} / {g['hit@10']:.2f} "
            f"| {g['mrr@10'] - f['mrr@10']:+.3f} |"
        )
    lines += ["", f"Shipped model (all projects, L2 {l2:g}):", "", "| feature | weight |", "| --- | ---: |"]
    lines += [f"| {name} | {weight:+.3f} |" for name, weight in shipped.table().items()]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
