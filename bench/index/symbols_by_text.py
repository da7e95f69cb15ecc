"""Is a documentSymbol answer a function of the file's text? pyright, same text under other roots (issue 23).

    python -m bench.index.symbols_by_text            # tornado 6.4.2 / 6.5.1 and ~300 stdlib modules

Not a timing: an exactness check for the per-user symbol cache
(graph/index/builder/caches/symbol_cache.py), which reuses pyright's answer for a text another
root already asked about. One pyright-langserver per root, started directly (no daemon),
initialized as an editor declaring hierarchical symbols; every Python file of a root is
opened, asked `textDocument/documentSymbol` and closed. The roots:

- `tornado-6.4.2` and `tornado-6.5.1`: the pinned sdists (files of equal text compared);
- `stdlib`: about 300 modules of this interpreter's standard library, in their packages;
- `flat`: every file of `tornado-6.4.2` and `stdlib` copied alone into one directory under
  a numbered name (no package, no neighbours: every relative import unresolved);
- `stdlib-py38-win`: `stdlib` again with a pyrightconfig.json of `pythonVersion = "3.8"`,
  `pythonPlatform = "Windows"`: the settings that change what pyright binds.

Each pair of roots counts the files whose answers are identical (names, kinds, ranges,
selection ranges, children, in order), and lists the others with whether their text has a
wildcard import or a static condition (sys.version_info, sys.platform, os.name).
"""

from __future__ import annotations

import re
import shutil
import sys
import sysconfig
import time
from pathlib import Path
from typing import Any

import anyio
from support.lspclient import LspClient

from bench import OUT_DIR as BENCH_OUT
from bench.fetch_corpus import CorpusError, Sdist, fetch_sdist
from bench.index.worktree import TORNADO_NEXT
from bench.runner import add_common_options, arg_parser, finish, result_header, run_and_save
from bench.search.corpus import PROJECTS

OUT_DIR = BENCH_OUT / "index"
STDLIB_FILES = 300
_WILDCARD = re.compile(r"^\s*from\s+\S+\s+import\s+\*", re.MULTILINE)
_STATIC = re.compile(r"sys\.version_info|sys\.platform|os\.name")


def _sdist_root(sdist: Sdist) -> Path:
    return fetch_sdist(sdist, OUT_DIR)


def _stdlib_root(work: Path) -> Path:
    source = Path(sysconfig.get_paths()["stdlib"])
    target = work / "stdlib"
    if target.exists():
        return target
    files = sorted(
        p
        for p in source.rglob("*.py")
        if not {"test", "tests", "idlelib", "site-packages", "lib2to3"} & set(p.relative_to(source).parts)
    )
    for path in files[:STDLIB_FILES]:
        dest = target / path.relative_to(source)
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, dest)
    return target


def _flat_root(work: Path, sources: list[Path]) -> tuple[Path, dict[str, str]]:
    """Every file alone under a numbered name; returns the map flat name -> 'root/rel'."""
    target = work / "flat"
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir()
    origin = {}
    n = 0
    for root in sources:
        for path in sorted(root.rglob("*.py")):
            name = f"m{n:04d}.py"
            shutil.copyfile(path, target / name)
            origin[name] = f"{root.name}/{path.relative_to(root).as_posix()}"
            n += 1
    return target, origin


async def _symbols(root: Path) -> dict[str, Any]:
    """documentSymbol of every .py file under root, by relative path, from one pyright of that root."""
    answers: dict[str, Any] = {}
    argv = [str(Path(sys.executable).parent / "pyright-langserver"), "--stdio"]
    async with LspClient.over_process(argv, name="symbols") as client:
        await client.initialize(root)
        for path in sorted(root.rglob("*.py")):
            text = path.read_text(encoding="utf-8", errors="replace")
            uri = await client.open(path, "python", text)
            answers[path.relative_to(root).as_posix()] = await client.request(
                "textDocument/documentSymbol", {"textDocument": {"uri": uri}}
            )
            await client.close(uri)
        await client.shutdown_and_exit()
    return answers


def _compare(
    left: dict[str, Any], right: dict[str, Any], pairs: list[tuple[str, str]], texts: dict[str, str]
) -> dict[str, Any]:
    same = 0
    differ = []
    for a, b in pairs:
        if left[a] == right[b]:
            same += 1
        else:
            text = texts[a]
            differ.append(
                {
                    "file": a,
                    "wildcard_import": bool(_WILDCARD.search(text)),
                    "static_condition": bool(_STATIC.search(text)),
                }
            )
    return {"files": len(pairs), "identical": same, "differ": differ}


def run(args: Any) -> dict[str, Any]:
    started = time.monotonic()
    result = result_header("bench.index.symbols_by_text", pyright=True)
    work = args.out / "symbols_by_text"
    work.mkdir(parents=True, exist_ok=True)
    old = _sdist_root(PROJECTS["tornado"])
    new = _sdist_root(TORNADO_NEXT)
    stdlib = _stdlib_root(work)
    flat, origin = _flat_root(work, [old, stdlib])
    configured = work / "stdlib-py38-win"
    if not configured.exists():
        shutil.copytree(stdlib, configured)
        (configured / "pyrightconfig.json").write_text('{"pythonVersion": "3.8", "pythonPlatform": "Windows"}\n')

    answers = {root.name: anyio.run(_symbols, root) for root in (old, new, stdlib, flat, configured)}
    texts = {
        f"{root.name}/{rel}": (root / rel).read_text(encoding="utf-8", errors="replace")
        for root in (old, stdlib)
        for rel in answers[root.name]
    }

    def keyed(root: Path) -> dict[str, Any]:
        return {f"{root.name}/{rel}": v for rel, v in answers[root.name].items()}

    equal_text = [
        (f"{old.name}/{rel}", f"{new.name}/{rel}")
        for rel in answers[old.name]
        if rel in answers[new.name] and (old / rel).read_bytes() == (new / rel).read_bytes()
    ]
    flat_answers = {origin[name]: v for name, v in answers[flat.name].items()}
    result["comparisons"] = {
        "tornado 6.4.2 vs 6.5.1, equal text": _compare(keyed(old), {**keyed(new)}, equal_text, texts),
        "in its root vs alone (flat)": _compare(
            {**keyed(old), **keyed(stdlib)}, flat_answers, [(k, k) for k in flat_answers], texts
        ),
        "stdlib vs stdlib with pythonVersion 3.8, Windows": _compare(
            keyed(stdlib),
            {f"{stdlib.name}/{rel}": v for rel, v in answers[configured.name].items()},
            [(k, k) for k in keyed(stdlib)],
            texts,
        ),
    }
    return finish(result, started)


def render(result: dict[str, Any]) -> str:
    lines = [
        "| roots compared | files | identical answers | differ (wildcard import / static condition) |",
        "|---|---:|---:|---|",
    ]
    for name, c in result["comparisons"].items():
        wild = sum(d["wildcard_import"] for d in c["differ"])
        static = sum(d["static_condition"] for d in c["differ"])
        lines.append(f"| {name} | {c['files']} | {c['identical']} | {len(c['differ'])} ({wild} / {static}) |")
    return "\n".join(lines)


def main() -> None:
    parser = arg_parser(__doc__)
    add_common_options(parser, OUT_DIR)
    args = parser.parse_args()
    sys.exit(run_and_save(args, "symbols_by_text", run, render, (CorpusError, OSError)))


if __name__ == "__main__":
    main()
