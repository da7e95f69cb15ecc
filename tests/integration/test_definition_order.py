"""A name bound in the client's own file and by imports: its definitions in pyright alone's order (real pyright).

pyright lists a name's declarations one by one, each a stub's followed by the sources the stub
maps to, so a name assigned in the file before it is imported from a module with a stub comes
out `[main.py, json/__init__.pyi, json/__init__.py]`. A client without
`textDocument.declaration` (Helix, Serena, the MCP bridges) has that list rebuilt from the
shared pyright's stubs and sources apart; here pyright alone and the daemon are asked about
each name (and about a member of a union of a source class and a stubbed one, and a stub
module with a variable of the same name) and must give the same list, for definition and
declaration alike.
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
    "import unittest\n"
    "\n"
    "from demo.boxes import Box\n"
    "from demo.local import Local\n"
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
    "\n"
    "unittest.main\n"
    "\n"
    "\n"
    "def measure(first: Local | Box, second: Box | Local) -> None:\n"
    "    first.size\n"
    "    second.size\n"
)
FILES = {
    "demo/__init__.py": "",
    "demo/main.py": MAIN,
    "demo/boxes.py": "class Box:\n    size = 1\n",
    "demo/boxes.pyi": "class Box:\n    size: int\n",
    "demo/local.py": "class Local:\n    size = 2\n",
    # A stub with no source beside it: pyright maps its declarations to nothing.
    "stubbed.pyi": "size: int\n",
}
# Where each question is asked: the line's text and the name within it.
QUESTIONS = {
    "assigned, then imported": ("alias", "alias"),
    "assigned, imported, assigned again": ("rebound", "rebound"),
    "assigned, then imported under a condition from one module or another": ("first", "first"),
    "assigned, then imported by name": ("dumps", "dumps"),
    "imported by name, else assigned": ("loads", "loads"),
    "assigned, then imported from a workspace module with a stub": ("Shelf", "Shelf"),
    "assigned, imported, then imported from a stub with no source": ("only_stub", "only_stub"),
    "imported from a stub with no source, then assigned": ("fallback", "fallback"),
    # A stub module and a variable in it, each mapped to its source.
    "a module and a variable of one name": ("unittest.main", "main"),
    # A member of a source class and of a stubbed one, in the union's order.
    "a member of a union, the source class first": ("    first.size", "size"),
    "a member of a union, the stubbed class first": ("    second.size", "size"),
}
METHODS = ("textDocument/definition", "textDocument/declaration")


def _without_declaration() -> dict[str, Any]:
    caps = default_client_capabilities()
    del caps["textDocument"]["declaration"]
    return caps


def _params(root: Path, question: str) -> dict[str, Any]:
    line_text, name = QUESTIONS[question]
    return {
        "textDocument": {"uri": path_uri(root / "demo/main.py")},
        "position": {"line": MAIN.split("\n").index(line_text), "character": line_text.index(name) + 1},
    }


async def _ask_all(client: LspClient, root: Path) -> dict[tuple[str, str], Any]:
    await client.initialize(root, capabilities=_without_declaration())
    await client.open(root / "demo/main.py", "python")
    return {
        (question, method): await client.request(method, _params(root, question), timeout=60)
        for question in QUESTIONS
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
    assert _files(want["a member of a union, the source class first", METHODS[0]]) == [
        "demo/local.py",
        "demo/boxes.pyi",
        "demo/boxes.py",
    ]
    async with LspClient.over_process(daemon.client_argv("pyright"), name="through") as through:
        got = await _ask_all(through, root)
    for key in want:
        assert _files(got[key]) == _files(want[key]), key
        assert got[key] == want[key], key
