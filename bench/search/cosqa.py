"""CoSQA: 500 real web queries over 6,267 Python functions, indexed as one project.

The data is not in this repository. Get `cosqa-retrieval-test-500.json` and
`code_idx_map.txt` from `data/search/` of the public CoCLR repository
(Jun-jie-Huang/CoCLR) into one directory and pass it (bench/README.md says how).

Each function of `code_idx_map.txt` (code -> index) becomes its own file,
`fNN/cNNNN.py` (100 a folder), written exactly as given (its docstring included, as
in the CoSQA retrieval setup); the tree is indexed by a real daemon (index_set.py)
like any project. A query is answered by the file of its `retrieval_idx`; any symbol
of that file counts. Strategies as in quality.py: the BM25 baseline over the 6,267
functions, lensmux keyword only, vector only, and the hybrid's stage 1 and ablations.

    python -m bench.search.cosqa /path/to/cosqa-data            # ≈ 3 min indexing + 2 min queries
    python -m bench.search.cosqa /path/to/cosqa-data --max-queries 100

Output: bench/out/search/cosqa.json and a markdown table on stdout.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import sys
from pathlib import Path
from typing import Any

from bench.runner import arg_parser
from bench.search.bm25 import Bm25, Document
from bench.search.corpus import OUT_DIR
from bench.search.index_set import index_at
from bench.search.offline import OfflineIndex
from bench.search.quality import SHIPPED, Bench, _MemoStore, _MemoVectors, config_from_json, markdown, measure
from bench.search.ranking import Answer, EvalItem, rank_of, sample

__all__ = ["build_tree", "load", "open_cosqa_bench"]

QUERIES_FILE = "cosqa-retrieval-test-500.json"
CODE_FILE = "code_idx_map.txt"
ROOT = OUT_DIR / "cosqa" / "root"
# Any line of the answer's file counts.
_WHOLE_FILE = 10**9


def _rel(index: int) -> str:
    return f"f{index // 100:02d}/c{index:04d}.py"


def load(data_dir: Path) -> tuple[dict[int, str], list[EvalItem]]:
    """(index -> code, the queries with their answers) from the two CoSQA files."""
    try:
        code_map: dict[str, int] = json.loads((data_dir / CODE_FILE).read_text(encoding="utf-8"))
        queries: list[dict[str, Any]] = json.loads((data_dir / QUERIES_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise SystemExit(f"bench.search.cosqa: cannot read the CoSQA files in {data_dir}: {exc}") from exc
    codes = {index: code for code, index in code_map.items()}
    items = [
        EvalItem(q["doc"], (Answer(_rel(int(q["retrieval_idx"])), q["idx"], 0, _WHOLE_FILE),))
        for q in queries
        if int(q.get("label", 1)) == 1
    ]
    return codes, items


def build_tree(codes: dict[int, str], root: Path = ROOT) -> bool:
    """Write one file per function (unless the tree already holds exactly these); True if written."""
    marker = root / ".cosqa-count"
    if marker.is_file() and marker.read_text() == str(len(codes)):
        return False
    shutil.rmtree(root, ignore_errors=True)
    (root / ".git").mkdir(parents=True)  # a work tree of its own: bench/out/ is git-ignored
    for index, code in codes.items():
        path = root / _rel(index)
        path.parent.mkdir(exist_ok=True)
        path.write_text(code + "\n", encoding="utf-8")
    marker.write_text(str(len(codes)))
    return True


def open_cosqa_bench(data_dir: Path, label: str = "", most: int | None = None) -> Bench:
    """CoSQA as a Bench like a project's (indexing it first if there is no index under `label`)."""
    from lensmux.graph.embedding.embedder import Embedder

    codes, items = load(data_dir)
    items = sample(items, most)
    written = build_tree(codes)
    saved = OUT_DIR / f"index-cosqa{'-' + label if label else ''}.json"
    record = index_at("cosqa", ROOT, label) if written or not saved.is_file() else json.loads(saved.read_text())
    bm25 = Bm25([Document(_rel(i), 0, code) for i, code in codes.items()])
    offline = OfflineIndex(Path(record["store_dir"]), Path(record["root"]), Embedder.open_default())
    return Bench(
        "cosqa",
        items,
        offline,
        [rank_of(item, bm25.search(item.query)) for item in items],
        sum(code.count("\n") + 1 for code in codes.values()),
        _MemoStore(offline.store),
        _MemoVectors(offline.vectors),
    )


def main(argv: list[str] | None = None) -> int:
    """Index the CoSQA functions and measure every strategy."""
    parser = arg_parser(__doc__)
    parser.add_argument("data_dir", type=Path, help=f"a directory holding {QUERIES_FILE} and {CODE_FILE}")
    parser.add_argument("--max-queries", type=int, help="a quick look: this many queries, evenly spaced")
    parser.add_argument("--search-config", default="", help="JSON of SearchConfig/FusionWeights fields to change")
    parser.add_argument("--reindex", action="store_true", help="index again even if an index exists")
    parser.add_argument("--index-label", default="", help="keep/use the index under this label (index_set --label)")
    args = parser.parse_args(argv)
    label = args.index_label
    if args.reindex:
        build_tree(load(args.data_dir)[0])
        index_at("cosqa", ROOT, label)
    config = config_from_json(args.search_config) if args.search_config else SHIPPED
    bench = open_cosqa_bench(args.data_dir, label, args.max_queries)
    saved = OUT_DIR / f"index-cosqa{'-' + label if label else ''}.json"
    record = json.loads(saved.read_text())
    codes_count = len(load(args.data_dir)[0])
    try:
        quality = measure(bench, config)
    finally:
        bench.close()
    result = {
        "cosqa": {"lines": bench.lines, "items": len(bench.items), "functions": codes_count, "quality": quality},
    }
    out = OUT_DIR / f"cosqa{'-' + label if label else ''}.json"
    out.write_text(
        json.dumps({"config": dataclasses.asdict(config) | {"generic_names": None}, "index": record} | result, indent=1)
    )
    print(markdown(result))
    print(f"\n(saved {out})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
