"""Does every client get pyright's own definition and declaration lists through the daemon?

    .venv/bin/python -m bench.mux.definition_lists                  # 50 stdlib modules, 12 names each
    .venv/bin/python -m bench.mux.definition_lists --names 40

A file imports each module under an alias and names the first public names of each (`m3.dumps`).
pyright alone is asked about each name, definition and declaration, once by a client without
`textDocument.declaration` (both answer every declaration, stubs and sources) and once by one with
it (definition answers the sources, declaration the stubs); then the same two clients ask the same
through one daemon, whose pyright answers the whole list and filters it for the second client
(adapters/pyright/pyright_definitions.py). Printed: each name and client whose list differs, and
the counts per client. Its numbers go to docs/sharing.md, *Go to definition and declaration*.
Nothing here is timed.
"""

from __future__ import annotations

import argparse
import importlib
import tempfile
from pathlib import Path
from typing import Any

import anyio
from support.daemon_proc import VENV_BIN, running_daemon
from support.lspclient import LspClient, capabilities_declaring

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


METHODS = ("textDocument/definition", "textDocument/declaration")
# The client's `textDocument.declaration`, by kind of client (None: not declared).
CLIENTS: dict[str, dict[str, Any] | None] = {"without declaration": None, "with declaration": {"linkSupport": False}}


def _caps(client: str) -> dict[str, Any]:
    return capabilities_declaring(CLIENTS[client])


async def _answers(argv: tuple[str, ...] | list[str], root: Path, asks: list[Ask], client: str) -> list[Any]:
    """One client's (definition, declaration) answers per name, from pyright alone or through the daemon."""
    out: list[Any] = []
    async with LspClient.over_process(argv, cwd=root, name=client) as lsp:
        await lsp.initialize(root, capabilities=_caps(client))
        uri = await lsp.open(root / "probe.py", "python")
        for line, character, _ in asks:
            params = {"textDocument": {"uri": uri}, "position": {"line": line, "character": character}}
            out.append([await lsp.request(method, params, timeout=120) for method in METHODS])
    return out


def _short(answer: Any) -> list[str]:
    return [f"{loc['uri'].rsplit('/', 1)[-1]}:{loc['range']['start']['line']}" for loc in answer or []]


async def _run(per_module: int) -> None:
    text, asks = _source(per_module)
    with tempfile.TemporaryDirectory(prefix="definition-lists-") as tmp:
        root = Path(tmp) / "probe"
        root.mkdir()
        (root / "probe.py").write_text(text)
        alone = {client: await _answers(PYRIGHT, root, asks, client) for client in CLIENTS}
        with running_daemon(Path(tmp) / "daemon") as daemon:
            through = {client: await _answers(daemon.client_argv("pyright"), root, asks, client) for client in CLIENTS}
    apart = sum(definition != declaration for definition, declaration in alone["with declaration"])
    print(f"names {len(asks)}, definition and declaration apart for a client with declaration {apart}")
    for client in CLIENTS:
        differ = 0
        for (_, _, name), want, got in zip(asks, alone[client], through[client], strict=True):
            if got != want:
                differ += 1
                for method, mine, its in zip(METHODS, want, got, strict=True):
                    if mine != its:
                        print(f"{client}: {name} {method}: pyright alone {_short(mine)}, through lensmux {_short(its)}")
        print(f"{client}: {len(asks) - differ} of {len(asks)} names the same (definition and declaration)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--names", type=int, default=12, help="public names asked per module (default 12)")
    args = parser.parse_args(argv)
    anyio.run(_run, args.names)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
