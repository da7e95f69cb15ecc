"""Collect (markdown, plaintext) hover pairs from the real clangd and pyright, as test data.

Each server runs twice on the same files: once told the daemon's own capabilities (markdown
first in `textDocument.hover.contentFormat`, what a shared server answers everybody) and once
told the same without `hover.contentFormat` (what a server alone answers a plaintext client:
multilspy, Serena's clangd, mcp-language-server). Both are asked to hover the same identifiers,
and every distinct pair of answers is written to a `.jsonl` file beside this script (a header line,
then one pair per line), for tests/adapters/test_hover_plaintext.py.

The files hovered: the synthetic corpus under corpus/ (every identifier), written for these
tests. With `--libraries`, also real documentation, as a check on this machine that is never
committed (its text is other projects'): for clangd, C headers of the C library and C++ headers
of libstdc++ (the first occurrence of each identifier); for pyright, names of standard-library
modules and of the packages in this venv, each hovered where a user file uses it; those pairs go
to `--out DIR` (default: a temporary directory, printed). Paths of the temporary workspace are
written as `$ROOT`.

    .venv/bin/python tests/adapters/hover/collect_pairs.py [--libraries [--out DIR]] [DATA_SET ...]
    LENSMUX_HOVER_PAIRS=DIR .venv/bin/pytest tests/adapters/test_hover_plaintext.py   (checks a --libraries run)
"""

from __future__ import annotations

import copy
import importlib
import importlib.metadata
import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import anyio

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))  # tests/, for `support`

from support.lspclient import LspClient  # noqa: E402

from lensmux.adapters.registry import adapter_for  # noqa: E402
from lensmux.daemon.config import load_config  # noqa: E402

NO_USER_CONFIG = Path("/nonexistent/lensmux-hover-pairs.toml")
IDENTIFIER = re.compile(r"[^\W\d]\w*")

C_HEADERS = [
    "/usr/include/stdio.h",
    "/usr/include/stdlib.h",
    "/usr/include/string.h",
    "/usr/include/unistd.h",
    "/usr/include/pthread.h",
    "/usr/include/time.h",
    "/usr/include/signal.h",
    "/usr/include/fcntl.h",
    "/usr/include/dirent.h",
    "/usr/include/ctype.h",
]
CXX_HEADERS = [
    "bits/stl_vector.h",
    "bits/stl_algo.h",
    "bits/basic_string.h",
    "bits/stl_map.h",
    "bits/unique_ptr.h",
    "optional",
]
# Modules whose public names a user file refers to, at most PER_MODULE of each.
PY_MODULES = [
    "json",
    "os.path",
    "re",
    "textwrap",
    "argparse",
    "subprocess",
    "collections",
    "functools",
    "itertools",
    "pathlib",
    "dataclasses",
    "typing",
    "enum",
    "logging",
    "asyncio",
    "shutil",
    "tempfile",
    "difflib",
    "heapq",
    "statistics",
    "random",
    "string",
    "inspect",
    "urllib.parse",
    "http.client",
    "email.message",
    "unittest",
    "csv",
    "datetime",
    "fractions",
    "numpy",
    "numpy.linalg",
    "networkx",
    "click",
    "attrs",
    "pydantic",
]
PER_MODULE = 12
PER_HEADER = 150
# Longer pairs are left out to keep the data small (a few module and class docstrings of pages).
LONGEST = 6000


def _utf16(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


def _positions(text: str, *, first_only: bool) -> list[tuple[int, int, str]]:
    """(line, UTF-16 column, identifier) of every identifier of a text, or of PER_HEADER first
    occurrences of distinct identifiers spread over it."""
    seen: set[str] = set()
    out: list[tuple[int, int, str]] = []
    for number, line in enumerate(text.split("\n")):
        for match in IDENTIFIER.finditer(line):
            name = match.group()
            if first_only and name in seen:
                continue
            seen.add(name)
            out.append((number, _utf16(line[: match.start()]), name))
    if first_only and len(out) > PER_HEADER:
        step = len(out) / PER_HEADER
        out = [out[int(k * step)] for k in range(PER_HEADER)]
    return out


def _plain_capabilities(capabilities: dict[str, Any]) -> dict[str, Any]:
    """The daemon's capabilities without `hover.contentFormat`, as the agent toolkits declare them."""
    caps: dict[str, Any] = copy.deepcopy(capabilities)
    caps["textDocument"]["hover"].pop("contentFormat", None)
    return caps


async def _hovers(
    server: str, argv: list[str], params: dict[str, Any], adapter: Any, files: list[tuple[Path, str, bool]]
) -> dict[str, Any]:
    """Hover answers keyed by `path:line:column:name`, from one server process.

    Each file is hovered twice and the second answers are kept: clangd takes the comments of
    declarations in headers from an index it builds after opening a file, so a first hover may
    come without them in one process and with them in the other.
    """
    answers: dict[str, Any] = {}
    async with LspClient.over_process(argv, name=f"{server}-pairs") as client:
        client.on_server_request("workspace/configuration", lambda p: adapter.configuration(p.get("items", [])))
        await client.request("initialize", params, timeout=120)
        await client.notify("initialized", {})
        for path, language, first_only in files:
            text = path.read_text(encoding="utf-8", errors="replace")
            uri = await client.open(path, language, text)
            for _ in range(2):
                for line, column, name in _positions(text, first_only=first_only):
                    position = {"line": line, "character": column}
                    answer = await client.request(
                        "textDocument/hover", {"textDocument": {"uri": uri}, "position": position}, timeout=120
                    )
                    answers[f"{path}:{line}:{column}:{name}"] = answer
            await client.close(uri)
    return answers


async def _pairs(server: str, root: Path, files: list[tuple[Path, str, bool]]) -> list[dict[str, str]]:
    config = load_config(NO_USER_CONFIG).servers[server]
    adapter = adapter_for(config)
    argv = [a for a in adapter.command(root, 0) if a != "--background-index"]
    params = adapter.initialize_params({}, root, 0)
    params["processId"] = None
    markdown = await _hovers(server, argv, params, adapter, files)
    plain_params = {**params, "capabilities": _plain_capabilities(params["capabilities"])}
    plain = await _hovers(server, argv, plain_params, adapter, files)
    pairs: dict[tuple[str, str], dict[str, str]] = {}
    for where, md in markdown.items():
        pt = plain.get(where)
        if md is None and pt is None:
            continue
        if not isinstance(md, dict) or not isinstance(pt, dict) or md.get("range") != pt.get("range"):
            print(f"{server}: answers differ in more than format at {where}: {md!r} / {pt!r}", file=sys.stderr)
            continue
        md_contents, pt_contents = md["contents"], pt["contents"]
        if md_contents.get("kind") != "markdown" or pt_contents.get("kind") != "plaintext":
            print(f"{server}: unexpected kinds at {where}: {md_contents!r} / {pt_contents!r}", file=sys.stderr)
            continue
        md_text = md_contents["value"].replace(str(root), "$ROOT")
        pt_text = pt_contents["value"].replace(str(root), "$ROOT")
        key = (md_text, pt_text)
        if key not in pairs and len(md_text) + len(pt_text) <= LONGEST:
            pairs[key] = {"where": where.replace(str(root), "$ROOT"), "markdown": md_text, "plaintext": pt_text}
    return list(pairs.values())


def _c_files(root: Path, comment_format: str | None, libraries: bool) -> list[tuple[Path, str, bool]]:
    shutil.copytree(HERE / "corpus" / "c", root, dirs_exist_ok=True)
    if comment_format is not None:
        (root / ".clangd").write_text(f"Documentation:\n  CommentFormat: {comment_format}\n")
    commands = []
    for source in sorted(root.iterdir()):
        if source.suffix in (".c", ".cpp"):
            compiler = "c++ -std=c++17" if source.suffix == ".cpp" else "cc -std=c11"
            commands.append({"directory": str(root), "file": str(source), "command": f"{compiler} -c {source.name}"})
    (root / "compile_commands.json").write_text(json.dumps(commands, indent=1))
    files: list[tuple[Path, str, bool]] = []
    for source in sorted(root.iterdir()):
        if source.suffix in (".c", ".h"):
            files.append((source, "c", False))
        elif source.suffix == ".cpp":
            files.append((source, "cpp", False))
    if comment_format is not None or not libraries:
        return files  # the configuration applies to files below the root only
    files += [(Path(h), "c", True) for h in C_HEADERS if Path(h).is_file()]
    cxx = sorted(Path("/usr/include/c++").glob("*"))
    if cxx:
        files += [(cxx[-1] / h, "cpp", True) for h in CXX_HEADERS if (cxx[-1] / h).is_file()]
    return files


def _public_names(module: str) -> list[str]:
    try:
        mod = importlib.import_module(module)
    except ImportError:
        return []
    return sorted(n for n in dir(mod) if not n.startswith("_"))[:PER_MODULE]


def _py_files(root: Path, libraries: bool) -> list[tuple[Path, str, bool]]:
    # Kept as .py.in so that linters leave its odd docstrings (tabs, trailing spaces) alone.
    shutil.copy(HERE / "corpus" / "py" / "docs.py.in", root / "docs.py")
    if not libraries:
        return [(root / "docs.py", "python", False)]
    lines = [f"import {m}" for m in PY_MODULES]
    lines += [f"{m}.{name}" for m in PY_MODULES for name in _public_names(m)]
    uses = root / "uses_libraries.py"
    uses.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return [(root / "docs.py", "python", False), (uses, "python", False)]


def _version(server: str, argv0: str) -> str:
    if server == "pyright":
        return f"pyright {importlib.metadata.version('pyright')}"
    out = subprocess.run([argv0, "--version"], capture_output=True, text=True, check=False)
    return out.stdout.strip().splitlines()[0] if out.stdout.strip() else "?"


# Data sets: (server, clangd's Documentation.CommentFormat, output file name).
DATA_SETS = {
    "clangd": ("clangd", None, "clangd_pairs.jsonl"),
    "clangd-markdown-comments": ("clangd", "Markdown", "clangd_markdown_comments_pairs.jsonl"),
    "clangd-doxygen-comments": ("clangd", "Doxygen", "clangd_doxygen_comments_pairs.jsonl"),
    "pyright": ("pyright", None, "pyright_pairs.jsonl"),
}


def main(names: list[str], libraries: bool, out_dir: Path) -> None:
    for name in names:
        server, comment_format, file_name = DATA_SETS[name]
        with tempfile.TemporaryDirectory(prefix="hover-pairs-") as tmp:
            root = Path(tmp).resolve()
            files = _c_files(root, comment_format, libraries) if server == "clangd" else _py_files(root, libraries)
            pairs = anyio.run(_pairs, server, root, files)
            argv0 = adapter_for(load_config(NO_USER_CONFIG).servers[server]).command(root, 0)[0]
            out = out_dir / file_name
            header = {"server": server, "version": _version(server, argv0), "comment_format": comment_format}
            lines = [json.dumps(header, ensure_ascii=False)] + [json.dumps(p, ensure_ascii=False) for p in pairs]
            out.write_text("\n".join(lines) + "\n", encoding="utf-8")
            print(f"{name}: {len(pairs)} pairs -> {out}")


if __name__ == "__main__":
    args = sys.argv[1:]
    with_libraries = "--libraries" in args
    out_dir = HERE
    if "--out" in args:
        out_dir = Path(args[args.index("--out") + 1])
        del args[args.index("--out") : args.index("--out") + 2]
    elif with_libraries:
        out_dir = Path(tempfile.mkdtemp(prefix="hover-pairs-libraries-"))
    out_dir.mkdir(parents=True, exist_ok=True)
    main([a for a in args if a != "--libraries"] or list(DATA_SETS), with_libraries, out_dir)
