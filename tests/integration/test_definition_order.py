"""A name bound in the client's own file and by imports: its definitions in pyright alone's order (real pyright).

pyright lists a name's declarations one by one, each a stub's followed by the sources the stub
maps to, so a name assigned in the file before it is imported from a module with a stub comes
out `[main.py, json/__init__.pyi, json/__init__.py]`. A client without
`textDocument.declaration` (Helix, Serena, the MCP bridges) has that list rebuilt from the
shared pyright's stubs and sources apart; here pyright alone and the daemon are asked about
each name and must give the same list, for definition and declaration alike.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from support.daemon_proc import VENV_BIN, DaemonProc
from support.lspclient import LspClient, default_client_capabilities, path_uri
from support.projects import write_files

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

PYRIGHT = (str(VENV_BIN / "pyright-langserver"), "--stdio")
# Each name is asked about on a line of its own, after its bindings.
MAIN = (
    "import sys\n"
    "\n"
    "alias = None\n"
    "import json as alias\n"
    "alias\n"
    "\n"
    "rebound = None\n"
    "import json as rebound\n"
    "rebound = 1\n"
    "rebound\n"
    "\n"
    "first = None\n"
    "if sys.argv:\n"
    "    import json as first\n"
    "else:\n"
    "    import csv as first\n"
    "first\n"
    "\n"
    "dumps = None\n"
    "from json import dumps\n"
    "dumps\n"
    "\n"
    "try:\n"
    "    from json import loads\n"
    "except ImportError:\n"
    "    loads = None\n"
    "loads\n"
    "\n"
    "Shelf = None\n"
    "from demo.boxes import Box as Shelf\n"
    "Shelf\n"
    "\n"
    "only_stub = None\n"
    "import json as only_stub\n"
    "import stubbed as only_stub\n"
    "only_stub\n"
    "\n"
    "import stubbed as fallback\n"
    "fallback = None\n"
    "fallback\n"
)
FILES = {
    "demo/__init__.py": "",
    "demo/main.py": MAIN,
    "demo/boxes.py": "class Box:\n    pass\n",
    "demo/boxes.pyi": "class Box: ...\n",
    # A stub with no source beside it: pyright maps its declarations to nothing.
    "stubbed.pyi": "size: int\n",
}
QUESTIONS = {
    "assigned, then imported": "alias",
    "assigned, imported, assigned again": "rebound",
    "assigned, then imported under a condition from one module or another": "first",
    "assigned, then imported by name": "dumps",
    "imported by name, else assigned": "loads",
    "assigned, then imported from a workspace module with a stub": "Shelf",
    "assigned, imported, then imported from a stub with no source": "only_stub",
    "imported from a stub with no source, then assigned": "fallback",
}
METHODS = ("textDocument/definition", "textDocument/declaration")


def _without_declaration() -> dict[str, Any]:
    caps = default_client_capabilities()
    del caps["textDocument"]["declaration"]
    return caps


def _params(root: Path, name: str) -> dict[str, Any]:
    return {
        "textDocument": {"uri": path_uri(root / "demo/main.py")},
        "position": {"line": MAIN.split("\n").index(name), "character": 1},
    }


async def _ask_all(client: LspClient, root: Path) -> dict[tuple[str, str], Any]:
    await client.initialize(root, capabilities=_without_declaration())
    await client.open(root / "demo/main.py", "python")
    return {
        (question, method): await client.request(method, _params(root, name), timeout=60)
        for question, name in QUESTIONS.items()
        for method in METHODS
    }


def _files(answer: Any) -> list[str]:
    return ["/".join(location["uri"].split("/")[-2:]) for location in answer or []]


async def test_a_name_bound_in_the_file_and_by_imports_lists_its_definitions_in_pyrights_order(
    daemon: DaemonProc, tmp_path: Path
) -> None:
    root = write_files(tmp_path / "order", FILES)
    async with LspClient.over_process(PYRIGHT, cwd=root, name="alone") as alone:
        want = await _ask_all(alone, root)
    # pyright alone lists the file's own binding before the stub, then the stub's source.
    assert _files(want["assigned, then imported", METHODS[0]]) == [
        "demo/main.py",
        "json/__init__.pyi",
        "json/__init__.py",
    ]
    assert _files(want["imported by name, else assigned", METHODS[0]]) == [
        "json/__init__.pyi",
        "json/__init__.py",
        "demo/main.py",
    ]
    assert _files(want["imported from a stub with no source, then assigned", METHODS[0]]) == [
        "order/stubbed.pyi",
        "demo/main.py",
    ]
    async with LspClient.over_process(daemon.client_argv("pyright"), name="through") as through:
        got = await _ask_all(through, root)
    for key in want:
        assert _files(got[key]) == _files(want[key]), key
        assert got[key] == want[key], key
