"""The localization benchmark's in-process rows over every mined commit: BM25 and vector-only on perfect chunks.

The daemon rows (localize.py) cost minutes per commit on a busy machine (an index
run and a learned call graph per parent), so they run on a capped subset. These two
baselines need neither: for each commit the parent's tree is read straight from the
mirror (`git ls-tree`, `git cat-file`), each Python, C and C++ file the index would
read (not in a skipped directory, not junk, under the size cap) cut into its
functions (localize_chunks.py), and the commit's cleaned message ranked against them:

- `bm25`: Okapi BM25 over split identifiers (bm25.py), document = path + function text;
- `vector`: cosine of the query's MiniLM embedding with each function's
  (`# language path` + text, the model reading its first 256 tokens).

Neighbouring parents share most functions, so a function is cut once per blob and
embedded once per text: the embeddings are kept under bench/out/localize/cache/
(gitignored, as all of bench/out/), and the per-commit figures in
bench/out/localize/offline-<project>.json after each commit; a re-run resumes.

    python -m bench.search.localize_offline --all
    python -m bench.search.localize_offline flask jq --max-commits 10

A ranked function finds an answer when it overlaps the answer's lines in the same file
(both are outermost functions, so overlap means the same function; the C/C++ scanner
and clangd may disagree on whether a `template <...>` line belongs to it).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path, PurePosixPath
from typing import Any

import numpy as np
import numpy.typing as npt

from bench.runner import arg_parser
from bench.search.bm25 import Bm25, Document
from bench.search.localize_answers import Function
from bench.search.localize_chunks import file_functions
from bench.search.localize_git import git
from bench.search.localize_mine import OUT_DIR
from bench.search.localize_projects import answer_language
from bench.search.localize_score import DEPTH, Target, aggregate, markdown_table, score, targets_of
from lensmux.graph.embedding.embedder import Embedder
from lensmux.graph.index.builder.files.junk import junk_reason
from lensmux.graph.index.builder.files.walk import ALWAYS_SKIPPED_DIRS, DEFAULT_MAX_FILE_BYTES, DEFAULT_SKIPPED_DIRS

log = logging.getLogger(__name__)

CACHE_DIR = OUT_DIR / "cache"
_SKIPPED = ALWAYS_SKIPPED_DIRS | DEFAULT_SKIPPED_DIRS
LABELS = {"bm25": "BM25 (perfect chunks)", "vector": "vector only (perfect chunks)"}


class Tree:
    """Functions of a repository's trees, cut once per blob."""

    def __init__(self, repo: Path) -> None:
        self.repo = repo
        self._by_blob: dict[tuple[str, str], tuple[list[Function], list[str]]] = {}

    def _blobs(self, sha: str) -> list[tuple[str, str]]:
        out = []
        for line in git(self.repo, "ls-tree", "-r", "--full-tree", sha).split("\n"):
            meta, _, path = line.partition("\t")
            parts = meta.split()
            skipped = {p.lower() for p in PurePosixPath(path).parts[:-1]} & _SKIPPED
            if len(parts) == 3 and parts[1] == "blob" and answer_language(path) is not None and not skipped:
                out.append((parts[2], path))
        return out

    def _read(self, blobs: Sequence[str]) -> dict[str, bytes]:
        """The contents of many blobs in one `git cat-file --batch`."""
        if not blobs:
            return {}
        done = subprocess.run(
            ["git", "-C", str(self.repo), "cat-file", "--batch"],
            input="\n".join(blobs).encode() + b"\n",
            capture_output=True,
            check=True,
        )
        out, data, i = {}, done.stdout, 0
        for blob in blobs:
            header_end = data.index(b"\n", i)
            size = int(data[i:header_end].split()[2])
            out[blob] = data[header_end + 1 : header_end + 1 + size]
            i = header_end + 1 + size + 1
        return out

    def documents(self, sha: str) -> list[tuple[Function, str]]:
        """(function, its text) of every function of the tree at `sha` the index would read."""
        blobs = self._blobs(sha)
        texts = self._read(sorted({b for b, p in blobs if (b, p) not in self._by_blob}))
        out: list[tuple[Function, str]] = []
        for blob, path in blobs:
            if (blob, path) not in self._by_blob:
                raw = texts[blob]
                text = raw.decode("utf-8", errors="replace")
                if len(raw) > DEFAULT_MAX_FILE_BYTES or junk_reason(path, text) is not None:
                    self._by_blob[blob, path] = ([], [])
                else:
                    self._by_blob[blob, path] = (file_functions(path, text), text.split("\n"))
            functions, lines = self._by_blob[blob, path]
            out += [(f, "\n".join(lines[f.first_line : f.end_line + 1])) for f in functions]
        return out


class VectorCache:
    """Function embeddings by the sha1 of the text embedded, on disk between runs."""

    def __init__(self, embedder: Embedder, path: Path) -> None:
        self.embedder = embedder
        self.path = path
        self._keys: list[str] = []
        self._rows: dict[str, int] = {}
        self._vectors = np.zeros((0, embedder.dim), dtype=np.float32)
        if path.with_suffix(".npy").is_file() and path.with_suffix(".json").is_file():
            self._keys = json.loads(path.with_suffix(".json").read_text())
            self._vectors = np.load(path.with_suffix(".npy"))[: len(self._keys)]
            self._rows = {k: i for i, k in enumerate(self._keys)}

    def matrix(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """The embeddings of `texts` in their order, computing the missing ones."""
        keys = [hashlib.sha1(t.encode()).hexdigest() for t in texts]
        missing = sorted({k: t for k, t in zip(keys, texts, strict=True) if k not in self._rows}.items())
        if missing:
            fresh = self.embedder.embed([t for _, t in missing])
            self._vectors = np.concatenate([self._vectors, np.asarray(fresh, dtype=np.float32)])
            for key, _ in missing:
                self._rows[key] = len(self._keys)
                self._keys.append(key)
            self.path.parent.mkdir(parents=True, exist_ok=True)
            np.save(self.path.with_suffix(".npy"), self._vectors)
            self.path.with_suffix(".json").write_text(json.dumps(self._keys))
        return self._vectors[[self._rows[k] for k in keys]]


def as_scored(ranked: Sequence[Function], targets: Sequence[Target]) -> list[tuple[str, int]]:
    """(path, line) items for localize_score.score: a function overlapping a target reports the target's line."""
    out = []
    for f in ranked:
        hit = next(
            (t for t in targets if t.path == f.path and f.first_line <= t.end_line and t.first_line <= f.end_line), None
        )
        out.append((f.path, hit.first_line if hit else f.first_line))
    return out


def run_commit(
    tree: Tree, vectors: VectorCache, commit: Mapping[str, Any], cache: dict[str, Counter[str]]
) -> dict[str, Any]:
    """Both baselines on one commit's parent."""
    started = time.perf_counter()
    docs = tree.documents(str(commit["parent"]))
    functions = [f for f, _ in docs]
    query, targets = str(commit["query"]), targets_of(commit["answers"])
    bm25 = Bm25([Document(f.path, i, text) for i, (f, text) in enumerate(docs)], cache)
    by_bm25 = [functions[line] for _, line in bm25.search(query, DEPTH)]
    texts = [f"# {answer_language(f.path)} {f.path}\n{text}" for f, text in docs]
    matrix = vectors.matrix(texts)
    cosine = matrix @ np.asarray(vectors.embedder.embed_query(query), dtype=np.float32)
    by_vector = [functions[i] for i in np.argsort(-cosine, kind="stable")[:DEPTH]]
    found = {n: score(targets, as_scored(r, targets)) for n, r in (("bm25", by_bm25), ("vector", by_vector))}
    # Answers the cut could not find at all (a function the scanner does not see): an upper bound on recall.
    reachable = sum(
        1
        for t in targets
        if any(f.path == t.path and f.first_line <= t.end_line and t.first_line <= f.end_line for f in functions)
    )
    return {
        "sha": commit["sha"],
        "answers": len(targets),
        "answers_in_documents": reachable,
        "documents": len(docs),
        "scores": found,
        "seconds": round(time.perf_counter() - started, 2),
        "loadavg": os.getloadavg(),
    }


def run_project(name: str, embedder: Embedder, max_commits: int | None, fresh: bool) -> dict[str, Any]:
    """Every mined commit of a project (resuming from its results file)."""
    mined = json.loads((OUT_DIR / f"mined-{name}.json").read_text())
    out = OUT_DIR / f"offline-{name}.json"
    previous = {} if fresh or not out.is_file() else {c["sha"]: c for c in json.loads(out.read_text())["commits"]}
    tree, cache = Tree(Path(mined["repo"])), dict[str, Counter[str]]()
    vectors = VectorCache(embedder, CACHE_DIR / f"vectors-{name}")
    result: dict[str, Any] = {"project": name, "pin": mined["pin"], "started": time.strftime("%Y-%m-%d %H:%M:%S %z"),
                              "loadavg_start": os.getloadavg(), "commits": []}  # fmt: skip
    for commit in mined["commits"][:max_commits]:
        figures = previous.get(commit["sha"]) or run_commit(tree, vectors, commit, cache)
        result["commits"].append(figures)
        out.write_text(json.dumps(result, indent=1))
        recall = {n: figures["scores"][n]["recall@20"] for n in LABELS}
        log.info("%s %s: R@20 %s (%s s)", name, commit["sha"][:10], recall, figures["seconds"])
    result["loadavg_end"] = os.getloadavg()
    result["quality"] = {n: aggregate([c["scores"][n] for c in result["commits"]]) for n in LABELS}
    out.write_text(json.dumps(result, indent=1))
    return result


def main(argv: list[str] | None = None) -> int:
    """Run the named projects."""
    parser = arg_parser(__doc__)
    parser.add_argument("projects", nargs="*", help="projects mined by localize_mine")
    parser.add_argument("--all", action="store_true", help="every mined project")
    parser.add_argument("--max-commits", type=int, help="the first N commits of each project")
    parser.add_argument("--fresh", action="store_true", help="ignore earlier results (embeddings stay cached)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    names = sorted(p.name[6:-5] for p in OUT_DIR.glob("mined-*.json")) if args.all else args.projects
    embedder = Embedder.open_default()
    results = {}
    for name in names:
        results[name] = run_project(name, embedder, args.max_commits, args.fresh)
        print(f"{name}: {json.dumps(results[name]['quality'])}", flush=True)
    print(markdown_table(results, LABELS, ratios=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
