"""Does the merge of pyright's two filtered definition answers give pyright's list for a client without declaration?

    .venv/bin/python -m bench.mux.definition_lists                  # 50 stdlib modules, 12 names each
    .venv/bin/python -m bench.mux.definition_lists --names 40

A file imports each module under an alias and names the first public names of each (`m3.dumps`).
pyright alone, once without `textDocument.declaration` (its definition answers every declaration,
stubs and sources) and once with it (definition answers the sources, declaration the stubs),
is asked about each name, with no lensmux in between; the second pair goes through the merge the
pyright adapter gives such a client (adapters/pyright/pyright_definitions.py). Printed: each name
whose merged list differs, and the counts. Its numbers go to docs/sharing.md, *Go to definition
and declaration*. Nothing here is timed.
"""

from __future__ import annotations

import argparse
import importlib
import tempfile
from pathlib import Path
from typing import Any

import anyio
from support.daemon_proc import VENV_BIN
from support.lspclient import LspClient, default_client_capabilities

from lensmux.adapters.pyright.pyright_definitions import unfiltered

PYRIGHT = (str(VENV_BIN / "pyright-langserver"), "--stdio")
MODULES = [
    "json",
    "re",
    "os",
    "os.path",
    "subprocess",
    "collections",
    "functools",
    "itertools",
    "typing",
    "datetime",
    "pathlib",
    "logging",
    "threading",
    "asyncio",
    "random",
    "string",
    "textwrap",
    "shutil",
    "tempfile",
    "dataclasses",
    "enum",
    "abc",
    "io",
    "csv",
    "argparse",
    "urllib.parse",
    "http.client",
    "email.message",
    "unittest",
    "contextlib",
    "collections.abc",
    "inspect",
    "socket",
    "time",
    "math",
    "heapq",
    "bisect",
    "copy",
    "pickle",
    "struct",
    "zipfile",
    "tarfile",
    "glob",
    "fnmatch",
    "hashlib",
    "base64",
    "uuid",
    "decimal",
    "fractions",
    "statistics",
]
Ask = tuple[int, int, str]


def _source(per_module: int) -> tuple[str, list[Ask]]:
    """The file's text and, per name, its line, a column inside the name, and the dotted name."""
    lines = [f"import {module} as m{i}" for i, module in enumerate(MODULES)]
    asks: list[Ask] = []
    for i, module in enumerate(MODULES):
        names = [name for name in dir(importlib.import_module(module)) if not name.startswith("_")]
        for name in names[:per_module]:
            lines.append(f"m{i}.{name}")
            asks.append((len(lines) - 1, len(f"m{i}.") + 1, f"{module}.{name}"))
    return "\n".join(lines) + "\n", asks


async def _answers(root: Path, asks: list[Ask], *, declaration: bool) -> list[Any]:
    """pyright alone's answers: definition without the capability, (declaration, definition) with it."""
    caps = default_client_capabilities()
    if not declaration:
        del caps["textDocument"]["declaration"]
    methods = ("textDocument/declaration", "textDocument/definition") if declaration else ("textDocument/definition",)
    out: list[Any] = []
    async with LspClient.over_process(PYRIGHT, cwd=root, name="alone") as client:
        await client.initialize(root, capabilities=caps)
        uri = await client.open(root / "probe.py", "python")
        for line, character, _ in asks:
            params = {"textDocument": {"uri": uri}, "position": {"line": line, "character": character}}
            out.append([await client.request(method, params, timeout=120) for method in methods])
    return out


def _short(answer: Any) -> list[str]:
    return [f"{loc['uri'].rsplit('/', 1)[-1]}:{loc['range']['start']['line']}" for loc in answer or []]


async def _run(per_module: int) -> None:
    text, asks = _source(per_module)
    with tempfile.TemporaryDirectory(prefix="definition-lists-") as tmp:
        root = Path(tmp)
        (root / "probe.py").write_text(text)
        whole = await _answers(root, asks, declaration=False)
        filtered = await _answers(root, asks, declaration=True)
    both = differ = 0
    for (_, _, name), (alone,), (stubs, sources) in zip(asks, whole, filtered, strict=True):
        both += stubs != sources
        merged = unfiltered(stubs, sources)
        if merged != alone:
            differ += 1
            print(f"{name}: pyright alone {_short(alone)}, merged {_short(merged)}")
    print(f"names {len(asks)}, with stubs and sources apart {both}, merged list differs {differ}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--names", type=int, default=12, help="public names asked per module (default 12)")
    args = parser.parse_args(argv)
    anyio.run(_run, args.names)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
