"""The search evaluation's projects: pinned PyPI sdists, a docstring-stripped copy each, and its queries.

Each project is fetched like every corpus (bench/fetch_corpus.py: pinned sdist,
`pip download --no-binary :all: --no-deps NAME==VER`) into bench/out/search/ and
copied to bench/out/search/roots/<name>/ with every function docstring removed
(docstring_strip.py). Git ignores bench/out/: sources are never committed.

The queries of a project are the first sentences of the docstrings of its library
code (not tests, docs or examples, whose docstrings describe test scenarios), each
answered by the function it was taken from. The whole sdist is indexed, tests
included, so those are distractors like in a real checkout.

    python -m bench.search.corpus flask requests   # fetch, strip, write queries; print a summary
"""

from __future__ import annotations

import json
import logging
import re
import shutil
import sys
from dataclasses import asdict, dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from bench import OUT_DIR as BENCH_OUT
from bench.fetch_corpus import CorpusError, Sdist, fetch_sdist
from bench.runner import arg_parser
from bench.search.c_strip import strip_c_comments
from bench.search.docstring_strip import StripFailed, first_sentence, is_trivial, strip_docstrings
from lensmux.graph.index.builder.files.junk import junk_reason

OUT_DIR = BENCH_OUT / "search"
# Bumped whenever stripping or query selection changes, so saved copies are rebuilt.
STRIP_VERSION = 4

log = logging.getLogger(__name__)

__all__ = ["CorpusError", "Prepared", "Project", "Query", "load_or_prepare", "prepare", "summary"]


@dataclass(frozen=True, slots=True)
class Project(Sdist):
    """One pinned source distribution and the role it plays in the evaluation."""

    role: str = "report"  # "tuning" or "report"
    language: str = "python"  # where the queries come from: "python" docstrings or "c" doc comments
    label: str = ""  # the project's name when it is not its package's (a binding named for the library it carries)

    @property
    def name(self) -> str:
        """The project's name: its package's, unless it has a label."""
        return self.label or self.package


# flask tunes; the others only report. requests (reST, ~11k lines), rich (Google style,
# ~27k) and tornado (reST, ~43k lines with its tests: the latency project).
PROJECTS: dict[str, Project] = {
    "flask": Project("flask", "3.1.0", "5f873c5184c897c8d9d1b05df1e3d01b14910ce69607a117bd3277098a5836ac", "tuning"),
    "requests": Project(
        "requests", "2.32.3", "55365417734eb18255590a9ff9eb97e9e1da868d4ccd6402399eaf68af20a760", "report"
    ),
    "rich": Project("rich", "13.9.4", "439594978a49a09530cff7ebc4b5c7103ef57baf48d5ea3184f21d9a2befa098", "report"),
    "tornado": Project(
        "tornado", "6.4.2", "92bad5b4746e9879fd7bf1eb21dce4e3fc5128d71601f80005afa39237ad620b", "report"
    ),
    # Added for the leave-one-project-out set: click (17k lines), jinja2 (22k), attrs (18k);
    # C: psutil (21k lines of C beside 30k of Python, queries from its C) and brotli (the
    # C library of the mux benchmarks, ~42k lines of C).
    "click": Project("click", "8.1.7", "ca9853ad459e787e2192211578cc907e7594e294c7ccc834310722b41b9ca6de"),
    "jinja2": Project("jinja2", "3.1.4", "4a3aee7acbbe7303aede8e9648d13b8bf88a429282aa6122a993f0ac800cb369"),
    "attrs": Project("attrs", "24.2.0", "5cfb1b9148b5b086569baec03f20d7b6bf3bcacc9a42bebf87ffaaca362f6346"),
    "psutil": Project(
        "psutil", "6.1.0", "353815f59a7f64cdaca1c0307ee13558a0512f6db064e92fe833784f08539c7a", language="c"
    ),
    "brotli": Project(
        "brotli", "1.2.1", "02b2f7b5a83485efe448a44ddf7983def05c3bb1dcf917d4f7154070260e13de", language="c"
    ),
    # Added for issue 22, chosen before any tuning so that the C keyword weight is measured on
    # C/C++ code it was not chosen on: Python bindings whose sdists carry the whole library.
    # C: libyaml (ruamel.yaml.clib: api.c, scanner.c, parser.c, emitter.c ...; its Cython-generated
    # module is not indexed and gives no query), LMDB (lmdb: mdb.c and midl.c in two versions,
    # lib/ and lib1/, plus the binding's cpython.c) and c-ares (pycares: deps/c-ares).
    # C++: jsonnet (core/*.cpp; vendored nlohmann/json and rapidyaml headers) and sentencepiece
    # (its C++ sources, third_party and a 138k-line generated table header).
    "libyaml": Project(
        "ruamel.yaml.clib", "0.2.15", "46e4cc8c43ef6a94885f72512094e482114a8a706d3c555a34ed4b0d20200600",
        archive_stem="ruamel_yaml_clib", language="c", label="libyaml",
    ),
    "lmdb": Project(
        "lmdb", "3.0.0", "06dda0723545e14d56ac7dcd6f582d9922c2ed5e16f1c3f8d0e670a96ec2ee65", language="c"
    ),
    "c-ares": Project(
        "pycares", "5.2.1", "3e89edc56a3745046676207958bf3dbf2971c5df0d64de9f7a893eba8bf255b4",
        language="c", label="c-ares",
    ),
    "jsonnet": Project(
        "jsonnet", "0.22.0", "eae5d9bf23c778baad39390f88c13c03b2090dfb5dfa148d6e217df8c1448258", language="c"
    ),
    "sentencepiece": Project(
        "sentencepiece", "0.2.3", "21618ad31f0453a1ebf5ec58defed99758d54af0b670546ecac639ddd8b86fbd", language="c"
    ),
}  # fmt: skip
C_SUFFIXES = (".c", ".h", ".cc", ".cpp", ".hpp")
# C and C++ test files by name (googletest's `*_test.cc`, `*_unittest.cc`, `test_*.c`).
_C_TEST_NAME = re.compile(r"(?:^test_.*|.*_(?:unit)?test)\.(?:c|cc|cpp)$")

_NOT_LIBRARY = frozenset({"test", "tests", "testing", "docs", "doc", "examples", "example", "benchmarks", "scripts"})


@dataclass(frozen=True, slots=True)
class Query:
    """One evaluation query and its answer in the stripped copy (0-based lines)."""

    query: str
    path: str
    qualname: str
    first_line: int
    def_line: int
    end_line: int


@dataclass(frozen=True, slots=True)
class Prepared:
    """A stripped copy ready to index, with its queries."""

    project: Project
    root: Path
    queries: list[Query]
    py_files: int
    py_lines: int
    stripped_docstrings: int
    skipped_trivial: int
    skipped_nested: int
    c_files: int = 0
    c_lines: int = 0


def is_library(rel_path: str) -> bool:
    """Whether a file is library code (queries come only from there)."""
    path = PurePosixPath(rel_path)
    if any(part in _NOT_LIBRARY for part in path.parts[:-1]):
        return False
    name = path.name
    if _C_TEST_NAME.match(name):
        return False
    return not (name.startswith("test_") or name.endswith("_test.py") or name in {"conftest.py", "setup.py"})


def prepare(name: str, out_dir: Path = OUT_DIR) -> Prepared:
    """Fetch, strip and write queries.json for one project (the copy is rebuilt every time)."""
    if name not in PROJECTS:
        raise CorpusError(f"unknown project {name!r} (known: {', '.join(PROJECTS)})")
    project = PROJECTS[name]
    pristine = fetch_sdist(project, out_dir)
    root = out_dir / "roots" / name / project.tree
    shutil.rmtree(root.parent, ignore_errors=True)
    shutil.copytree(pristine, root)
    # The copy lives under bench/out/, which the checkout's .gitignore ignores; a .git of
    # its own makes it a work tree of its own, as a real checkout is, so the index reads it.
    (root / ".git").mkdir(exist_ok=True)
    queries: list[Query] = []
    files = lines = stripped_count = trivial = nested = 0
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        source = path.read_text(encoding="utf-8")
        files += 1
        lines += len(source.splitlines())
        try:
            stripped, definitions = strip_docstrings(source)
        except SyntaxError:
            log.warning("%s does not parse; left as is", rel)
            continue
        except StripFailed as exc:
            raise CorpusError(f"{rel}: {exc}") from exc
        path.write_text(stripped, encoding="utf-8")
        for d in definitions:
            if d.docstring is None:
                continue
            stripped_count += 1
            if not is_library(rel):
                continue
            if d.nested:
                nested += 1
                continue
            if project.language != "python":
                continue
            sentence = first_sentence(d.docstring)
            if is_trivial(sentence):
                trivial += 1
                continue
            queries.append(Query(sentence, rel, d.qualname, d.first_line, d.def_line, d.end_line))
    c_files = c_lines = 0
    if project.language == "c":
        c_files, c_lines, c_counts = _strip_c(root, queries)
        stripped_count += c_counts[0]
        trivial += c_counts[1]
    prepared = Prepared(project, root, queries, files, lines, stripped_count, trivial, nested, c_files, c_lines)
    (root.parent / "queries.json").write_text(json.dumps(summary(prepared) | {"queries": [asdict(q) for q in queries]}))
    return prepared


def _strip_c(root: Path, queries: list[Query]) -> tuple[int, int, tuple[int, int]]:
    """Blank the doc comments of every C/C++ file; queries from documented definitions in library .c files."""
    files = lines = stripped = trivial = 0
    for path in sorted(p for p in root.rglob("*") if p.suffix in C_SUFFIXES and p.is_file()):
        rel = path.relative_to(root).as_posix()
        source = path.read_text(encoding="utf-8", errors="replace")
        files += 1
        lines += len(source.splitlines())
        text, definitions = strip_c_comments(source)
        path.write_text(text, encoding="utf-8")
        stripped += len(definitions)
        if path.suffix not in (".c", ".cc", ".cpp") or not is_library(rel) or junk_reason(rel, source) is not None:
            continue
        for d in definitions:
            if not d.definition:
                continue
            sentence = first_sentence(d.comment)
            if is_trivial(sentence) or sentence.upper().startswith(("TODO", "FIXME", "XXX", "NOTE")):
                trivial += 1
                continue
            queries.append(Query(sentence, rel, d.name, d.first_line, d.def_line, d.end_line))
    return files, lines, (stripped, trivial)


def load_or_prepare(name: str, out_dir: Path = OUT_DIR) -> Prepared:
    """The prepared copy from an earlier run when it is there (same pin, same stripper), else prepare()."""
    project = PROJECTS.get(name)
    if project is None:
        raise CorpusError(f"unknown project {name!r} (known: {', '.join(PROJECTS)})")
    saved = out_dir / "roots" / name / "queries.json"
    try:
        data = json.loads(saved.read_text())
    except (OSError, ValueError):
        return prepare(name, out_dir)
    root = Path(data["root"])
    if data.get("sha256") != project.sha256 or data.get("strip_version") != STRIP_VERSION or not root.is_dir():
        return prepare(name, out_dir)
    queries = [Query(**q) for q in data["queries"]]
    return Prepared(
        project, root, queries, data["py_files"], data["py_lines"], data["stripped_docstrings"],
        data["skipped_trivial"], data["skipped_nested"], data.get("c_files", 0), data.get("c_lines", 0),
    )  # fmt: skip


def summary(prepared: Prepared) -> dict[str, Any]:
    """What the report says about a project."""
    p = prepared.project
    return {
        "strip_version": STRIP_VERSION,
        "project": p.name,
        "version": p.version,
        "role": p.role,
        "sdist": p.archive,
        "sha256": p.sha256,
        "root": str(prepared.root),
        "py_files": prepared.py_files,
        "py_lines": prepared.py_lines,
        "language": p.language,
        "c_files": prepared.c_files,
        "c_lines": prepared.c_lines,
        "stripped_docstrings": prepared.stripped_docstrings,
        "queries": len(prepared.queries),
        "skipped_trivial": prepared.skipped_trivial,
        "skipped_nested": prepared.skipped_nested,
    }


def main(argv: list[str] | None = None) -> int:
    """Prepare projects and print their summaries."""
    parser = arg_parser(__doc__)
    parser.add_argument("projects", nargs="*", default=sorted(PROJECTS), help=f"any of {sorted(PROJECTS)}")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    for name in args.projects:
        try:
            prepared = prepare(name)
        except CorpusError as exc:
            print(f"bench.search.corpus: {exc}", file=sys.stderr)
            return 1
        print(json.dumps(summary(prepared)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
