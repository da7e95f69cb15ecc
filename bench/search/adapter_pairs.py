"""Training pairs for the query adapter: (docstring first sentence, the chunk lensmux would index).

Mined from Python code already on this machine: the interpreter's standard library
(`sysconfig` "stdlib", without its tests and its own site-packages) and the packages
installed in this checkout's virtualenv (`purelib`). Never from a project of the
search benchmarks (corpus.py's nine, and those the localization benchmark may pick)
nor from a package of the same name: a distribution so named is skipped with every
file its RECORD lists, and so is any folder or module of that name wherever it is
(`pip/_vendor/rich`, `pip/_vendor/requests`). Tests, docs and examples are skipped
like the benchmark skips them for queries (corpus.is_library), and so are stub files.

Each pair is what the benchmark pairs: the query is the first sentence of a
function's docstring (trivial ones skipped, the benchmark's rule); the code is that
function's chunk as `graph/index/builder/preparing/chunking.py` makes it from the docstring-stripped
file (header line, a line of plain words, the text; the first part of a long one),
with the symbols pyright would report (classes, methods, functions; ranges from the
first decorator). Pairs are deduplicated on the query (case and spaces folded: one
sentence naming several functions would be a false negative in its own batch) and on
the code body (copies vendored in several packages); the first seen wins, in a fixed
order (standard library first, then site-packages, paths sorted). The validation
slice is every pair of the top-level packages whose name hashes to 0 mod 10, so no
package is split between the two.

    python -m bench.search.adapter_pairs          # writes bench/out/search/adapter/pairs.jsonl, prints a summary
"""

from __future__ import annotations

import ast
import hashlib
import json
import logging
import re
import sys
import sysconfig
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

from bench.runner import arg_parser
from bench.search.corpus import OUT_DIR, is_library
from bench.search.docstring_strip import StripFailed, first_sentence, is_trivial, strip_docstrings
from lensmux.graph.index.builder.preparing.chunking import ChunkConfig, chunk_file
from lensmux.graph.index.builder.preparing.document_symbols import LspRange, ParsedSymbol

log = logging.getLogger(__name__)

__all__ = ["EXCLUDED", "Pair", "mine", "python_symbols"]

ADAPTER_DIR = OUT_DIR / "adapter"
# The benchmark projects (corpus.py, with the C/C++ ones other branches add: libyaml as
# ruamel.yaml.clib, lmdb, c-ares as pycares, jsonnet, sentencepiece) and those the
# localization benchmark may use, by distribution, import and project name: none of their
# code may teach the adapter their answers. PyYAML (`yaml`, `_yaml`) goes too: its scanner
# and parser are libyaml's, function for function.
EXCLUDED = frozenset(
    {
        "flask", "requests", "rich", "tornado", "click", "jinja", "jinja2", "attrs", "attr", "psutil",
        "brotli", "jq", "lz4", "zstd", "zstandard", "fmt", "libuv", "redis",
        "libyaml", "yaml", "_yaml", "pyyaml", "ruamel", "ruamel_yaml", "ruamel_yaml_clib", "lmdb",
        "pycares", "c_ares", "cares", "jsonnet", "sentencepiece",
    }
)  # fmt: skip
# Bumped whenever mining changes, so a saved pair file is never mistaken for a new one.
PAIRS_VERSION = 2
_VALIDATION_MOD = 10
_SKIP_FOLDERS = frozenset({"__pycache__", "site-packages", "idle_test", "test", "tests", "testing"})
_NAME = re.compile(r"[-_.]+")


@dataclass(frozen=True, slots=True)
class Pair:
    """One (query, chunk) pair and where it came from."""

    query: str
    code: str
    source: str  # "stdlib" or "site-packages"
    package: str  # top-level package or module
    path: str  # relative to its source root
    qualname: str
    split: str  # "train" or "validation"


def _normal(name: str) -> str:
    return _NAME.sub("_", name).lower()


def _excluded_files(purelib: Path) -> tuple[set[Path], list[str]]:
    """Every file an excluded distribution installed, and those distributions' names and versions."""
    files: set[Path] = set()
    found: list[str] = []
    for dist in metadata.distributions(path=[str(purelib)]):
        name = _normal(dist.metadata["Name"] or "")
        if name not in EXCLUDED:
            continue
        found.append(f"{dist.metadata['Name']} {dist.version}")
        for entry in dist.files or []:
            files.add((purelib / entry).resolve())
    return files, sorted(found)


def python_symbols(source: str) -> list[ParsedSymbol]:
    """The symbols pyright reports that chunking uses: classes, methods and functions, parents first."""
    tree = ast.parse(source)
    out: list[ParsedSymbol] = []
    lines = source.split("\n")

    def column(line: int, col: int) -> int:
        # ast columns are UTF-8 byte offsets; LSP ranges count UTF-16 units.
        text = lines[line].encode()[:col].decode(errors="replace")
        return len(text.encode("utf-16-le")) // 2

    def visit(node: ast.AST, parent: int | None) -> None:
        for child in ast.iter_child_nodes(node):
            if not isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                visit(child, parent)
                continue
            owner = out[parent] if parent is not None else None
            if isinstance(child, ast.ClassDef):
                kind = "class"
            else:
                kind = "method" if owner is not None and owner.kind == "class" else "function"
            first = min([child.lineno, *(d.lineno for d in child.decorator_list)])
            start_col = min([child.col_offset, *(d.col_offset - 1 for d in child.decorator_list)])
            end = (child.end_lineno or child.lineno) - 1
            rng = LspRange(first - 1, max(0, column(first - 1, start_col)), end, column(end, child.end_col_offset or 0))
            def_line = child.lineno - 1
            at = lines[def_line].find(child.name)
            sel_start = column(def_line, at) if at >= 0 else 0
            selection = LspRange(def_line, sel_start, def_line, sel_start + len(child.name))
            qualified = f"{owner.qualified_name}.{child.name}" if owner else child.name
            out.append(
                ParsedSymbol(
                    name=child.name,
                    qualified_name=qualified,
                    kind=kind,
                    detail=None,
                    range=rng,
                    selection_range=selection,
                    container=owner.qualified_name if owner else None,
                    parent=parent,
                    depth=owner.depth + 1 if owner else 0,
                )
            )
            visit(child, len(out) - 1)

    visit(tree, None)
    return out


def _files(root: Path, skip: Callable[[Path], bool]) -> Iterator[Path]:
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root)
        if any(part in _SKIP_FOLDERS for part in rel.parts[:-1]) or skip(path):
            continue
        if not is_library(rel.as_posix()):
            continue
        yield path


def _file_pairs(path: Path, rel: str, measure: Callable[[str], int]) -> Iterator[tuple[str, str, str]]:
    """(query, chunk text, qualname) for each documented, non-nested function of one file."""
    try:
        source = path.read_text(encoding="utf-8")
        stripped, definitions = strip_docstrings(source)
        symbols = python_symbols(stripped)
    except (OSError, UnicodeDecodeError, SyntaxError, ValueError, StripFailed, RecursionError):
        return
    wanted: dict[str, str] = {}
    for d in definitions:
        if d.docstring is None or d.nested:
            continue
        sentence = first_sentence(d.docstring)
        if not is_trivial(sentence):
            wanted.setdefault(d.qualname, sentence)
    if not wanted:
        return
    chunks = chunk_file(rel, "python", stripped, symbols, ChunkConfig(), measure=measure)
    seen: set[str] = set()
    for chunk in chunks:
        if chunk.symbol is None or chunk.name in seen or chunk.name not in wanted:
            continue
        if symbols[chunk.symbol].kind not in ("function", "method"):
            continue
        seen.add(chunk.name)
        yield wanted[chunk.name], chunk.text, chunk.name


def _body_key(chunk: str) -> str:
    # The header and words lines name the path; a vendored copy differs only there.
    body = chunk.split("\n", 2)[-1]
    return hashlib.sha1(" ".join(body.split()).encode()).hexdigest()


def _split(package: str) -> str:
    digest = int(hashlib.sha1(package.encode()).hexdigest(), 16)
    return "validation" if digest % _VALIDATION_MOD == 0 else "train"


def mine(measure: Callable[[str], int], stdlib: Path | None = None, purelib: Path | None = None) -> dict[str, Any]:
    """Every pair, deduplicated and split, and what was read and skipped."""
    stdlib = stdlib or Path(sysconfig.get_paths()["stdlib"])
    purelib = purelib or Path(sysconfig.get_paths()["purelib"])
    excluded_files, excluded_dists = _excluded_files(purelib)

    def skip_site(path: Path) -> bool:
        rel = path.relative_to(purelib)
        names = {_normal(part.removesuffix(".py")) for part in rel.parts}
        return bool(names & EXCLUDED) or path.resolve() in excluded_files or rel.parts[0].startswith("lensmux")

    def skip_stdlib(path: Path) -> bool:
        return bool({_normal(part.removesuffix(".py")) for part in path.relative_to(stdlib).parts} & EXCLUDED)

    pairs: list[Pair] = []
    queries: set[str] = set()
    bodies: set[str] = set()
    counts = {"files": 0, "documented": 0, "duplicate_query": 0, "duplicate_code": 0}
    for source, root, skip in (("stdlib", stdlib, skip_stdlib), ("site-packages", purelib, skip_site)):
        for path in _files(root, skip):
            rel = path.relative_to(root).as_posix()
            counts["files"] += 1
            package = rel.split("/", 1)[0].removesuffix(".py")
            for query, code, qualname in _file_pairs(path, rel, measure):
                counts["documented"] += 1
                folded = " ".join(query.lower().split())
                if folded in queries:
                    counts["duplicate_query"] += 1
                    continue
                key = _body_key(code)
                if key in bodies:
                    counts["duplicate_code"] += 1
                    continue
                queries.add(folded)
                bodies.add(key)
                pairs.append(Pair(query, code, source, package, rel, qualname, _split(f"{source}:{package}")))
    return {
        "version": PAIRS_VERSION,
        "stdlib": str(stdlib),
        "purelib": str(purelib),
        "python": sys.version.split()[0],
        "excluded_names": sorted(EXCLUDED),
        "excluded_distributions": excluded_dists,
        "counts": counts
        | {
            "pairs": len(pairs),
            "train": sum(p.split == "train" for p in pairs),
            "validation": sum(p.split == "validation" for p in pairs),
            "packages": len({(p.source, p.package) for p in pairs}),
        },
        "pairs": pairs,
    }


def write(mined: dict[str, Any], out_dir: Path = ADAPTER_DIR) -> Path:
    """pairs.jsonl (one pair a line) and pairs-summary.json; the pairs file's path."""
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / "pairs.jsonl"
    with path.open("w", encoding="utf-8") as f:
        for pair in mined["pairs"]:
            f.write(json.dumps(asdict(pair), ensure_ascii=False) + "\n")
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    summary = {k: v for k, v in mined.items() if k != "pairs"} | {"sha256": digest}
    (out_dir / "pairs-summary.json").write_text(json.dumps(summary, indent=1))
    return path


def read_pairs(path: Path = ADAPTER_DIR / "pairs.jsonl") -> list[Pair]:
    """The pairs a mining run wrote."""
    with path.open(encoding="utf-8") as f:
        return [Pair(**json.loads(line)) for line in f]


def main(argv: list[str] | None = None) -> int:
    """Mine, write, print the summary."""
    parser = arg_parser(__doc__)
    parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    from lensmux.graph.embedding.embedder import Embedder

    embedder = Embedder.open_default()
    mined = mine(embedder.count_tokens)
    path = write(mined)
    print(json.dumps({k: v for k, v in mined.items() if k != "pairs"} | {"file": str(path)}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
