"""Reproduces the pyright defect that breaks `textDocument/references` for the rest of a process's life.

Found while benchmarking the hybrid search: once one references request is cancelled
with `$/cancelRequest` (the search does this when its expansion budget runs out, the
daemon when a request times out, editors when the user moves on), every later
references request to the same pyright process fails with `this._token.cancel is not
a function` (-32603). From pyright's bundled code, the likely cause: onReferences first
cancels the previous find-all-references token source, and for a source whose request
was cancelled that call throws; it throws before the field is cleared, so it throws
again on every later request.

This talks to pyright directly over stdio with the test suite's client (no lensmux
code in between):

    python -m bench.search.pyright_cancel [ROOT FILE]   # default: the flask copy of bench.search.corpus

It prints each answer; on an affected pyright the three requests after the cancelled one fail.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import anyio
from support.lspclient import LspClient, LspResponseError, LspTimeout

from bench.search.corpus import OUT_DIR

PYRIGHT = Path(sys.executable).parent / "pyright-langserver"
DEFAULT_ROOT = OUT_DIR / "roots" / "flask" / "flask-3.1.0"
DEFAULT_FILE = "src/flask/app.py"


def _functions(path: Path, count: int) -> list[tuple[int, int]]:
    """(line, column of the name) of the first `count` defs in a file."""
    out: list[tuple[int, int]] = []
    for number, line in enumerate(path.read_text().split("\n")):
        stripped = line.lstrip()
        if stripped.startswith("def "):
            out.append((number, len(line) - len(stripped) + 4))
    return out[:count]


async def reproduce(root: Path, path: Path) -> list[str]:
    """One cancelled references request, then three plain ones; a line per answer."""
    lines: list[str] = []
    async with LspClient.over_process([str(PYRIGHT), "--stdio"], cwd=root, name="pyright") as client:
        await client.initialize(root, capabilities={"window": {"workDoneProgress": True}})
        await client.open(path, "python")
        targets = _functions(path, 4)

        async def references(line: int, column: int) -> None:
            params = {
                "textDocument": {"uri": path.as_uri()},
                "position": {"line": line, "character": column},
                "context": {"includeDeclaration": False},
            }
            started = time.perf_counter()
            try:
                found = await client.request("textDocument/references", params, timeout=60)
                outcome = f"ok, {len(found or [])} locations"
            except (LspResponseError, LspTimeout) as exc:
                outcome = f"error: {exc}"
            took = (time.perf_counter() - started) * 1000
            lines.append(f"references at {line + 1}:{column + 1}: {outcome} ({took:.0f} ms)")

        async with anyio.create_task_group() as tg:
            tg.start_soon(references, *targets[0])
            await anyio.sleep(0.3)
            # The first request the client sent after initialize has id 2.
            await client.notify("$/cancelRequest", {"id": 2})
        for target in targets[1:]:
            await references(*target)
        await client.shutdown_and_exit()
    return lines


def main(argv: list[str] | None = None) -> int:
    """Run the reproduction and print what pyright answered."""
    args = sys.argv[1:] if argv is None else argv
    root = Path(args[0]).resolve() if args else DEFAULT_ROOT.resolve()
    path = root / (args[1] if len(args) > 1 else DEFAULT_FILE)
    if not path.is_file():
        print(f"{path} does not exist (run `python -m bench.search.corpus flask` first)", file=sys.stderr)
        return 2
    for line in anyio.run(reproduce, root, path):
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
