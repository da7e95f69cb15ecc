"""A name bound in the client's own file and by imports: its definitions as pyright alone lists them (real pyright).

pyright lists a name's declarations one by one, each a stub's followed by the sources the stub
maps to, so a name assigned in the file before it is imported from a module with a stub comes
out `[main.py, json/__init__.pyi, json/__init__.py]`. A client without
`textDocument.declaration` (Helix, Serena, the MCP bridges) gets that whole list; one with it
(VS Code, Neovim, Emacs) gets it filtered, and for a `typing` name pyright's definition also
leaves out typing.py's `_alias` variables. Here pyright alone and the daemon are asked about
each name (and about a member of a union of a source class and a stubbed one, a stub module
with a variable of the same name, and `typing`'s context managers) by both kinds of client and
must give the same list, for definition and declaration alike, and so about every public
`typing` name.
"""

from __future__ import annotations

import typing
from pathlib import Path
from typing import Any

import pytest
from support.daemon_proc import VENV_BIN, DaemonProc
from support.lspclient import LspClient, capabilities_declaring, path_uri
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
    "bare = None\n"
    "import stubbed as bare\n"
    "bare\n"
    "\n"
    "import typing\n"
    "typing.AsyncContextManager\n"
    "typing.ContextManager\n"
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
    "assigned, then imported from a stub with no source": ("bare", "bare"),
    # typing.pyi's declaration maps to contextlib.py's class and typing.py's `_alias` variable.
    "typing's async context manager": ("typing.AsyncContextManager", "AsyncContextManager"),
    "typing's context manager": ("typing.ContextManager", "ContextManager"),
    # A member of a source class and of a stubbed one, in the union's order.
    "a member of a union, the source class first": ("    first.size", "size"),
    "a member of a union, the stubbed class first": ("    second.size", "size"),
}
METHODS = ("textDocument/definition", "textDocument/declaration")
# The client's `textDocument.declaration`, by kind of client (None: not declared).
CLIENTS: dict[str, dict[str, Any] | None] = {"without declaration": None, "with declaration": {"linkSupport": False}}
# Every public name of the typing module, asked as `typing.NAME` on a line of its own.
TYPING_NAMES = [name for name in dir(typing) if not name.startswith("_")]
TYPING_FILE = "import typing\n" + "".join(f"typing.{name}\n" for name in TYPING_NAMES)


def _caps(client: str) -> dict[str, Any]:
    return capabilities_declaring(CLIENTS[client])


def _params(root: Path, question: str) -> dict[str, Any]:
    line_text, name = QUESTIONS[question]
    return {
        "textDocument": {"uri": path_uri(root / "demo/main.py")},
        "position": {"line": MAIN.split("\n").index(line_text), "character": line_text.index(name) + 1},
    }


async def _ask_all(client: LspClient, root: Path, kind: str) -> dict[tuple[str, str], Any]:
    await client.initialize(root, capabilities=_caps(kind))
    await client.open(root / "demo/main.py", "python")
    return {
        (question, method): await client.request(method, _params(root, question), timeout=60)
        for question in QUESTIONS
        for method in METHODS
    }


def _files(answer: Any) -> list[str]:
    return ["/".join(location["uri"].split("/")[-2:]) for location in answer or []]


def _names(answer: Any) -> list[str]:
    return [location["uri"].rsplit("/", 1)[-1] for location in answer or []]


async def test_a_name_bound_in_the_file_and_by_imports_lists_its_definitions_as_pyright_does(
    daemon: DaemonProc, tmp_path: Path
) -> None:
    root = write_files(tmp_path / "order", FILES)
    want = {}
    for kind in CLIENTS:
        async with LspClient.over_process(PYRIGHT, cwd=root, name="alone") as alone:
            want[kind] = await _ask_all(alone, root, kind)
    whole, editor = want["without declaration"], want["with declaration"]
    # pyright alone lists the file's own binding before the stub, then the stub's source.
    assert _files(whole["assigned, then imported", METHODS[0]]) == [
        "demo/main.py",
        "json/__init__.pyi",
        "json/__init__.py",
    ]
    assert _files(whole["imported by name, else assigned", METHODS[0]]) == [
        "json/__init__.pyi",
        "json/__init__.py",
        "demo/main.py",
    ]
    assert _files(whole["imported from a stub with no source, then assigned", METHODS[0]]) == [
        "order/stubbed.pyi",
        "demo/main.py",
    ]
    assert _files(whole["assigned, then imported from a stub with no source", METHODS[0]]) == [
        "demo/main.py",
        "order/stubbed.pyi",
    ]
    assert _files(whole["a member of a union, the source class first", METHODS[0]]) == [
        "demo/local.py",
        "demo/boxes.pyi",
        "demo/boxes.py",
    ]
    # typing.py's `_alias` variable is in the whole list, not in an editor's definition.
    context = "typing's async context manager"
    assert _names(whole[context, METHODS[0]]) == ["typing.pyi", "typing.py", "contextlib.py"]
    assert _names(editor[context, METHODS[0]]) == ["contextlib.py"]
    assert _names(editor[context, METHODS[1]]) == ["typing.pyi"]
    got = {}
    for kind in CLIENTS:
        async with LspClient.over_process(daemon.client_argv("pyright"), name="through") as through:
            got[kind] = await _ask_all(through, root, kind)
    for kind in CLIENTS:
        for key in want[kind]:
            assert _files(got[kind][key]) == _files(want[kind][key]), (kind, key)
            assert got[kind][key] == want[kind][key], (kind, key)


async def _ask_typing(argv: tuple[str, ...] | list[str], root: Path, kind: str) -> list[list[Any]]:
    async with LspClient.over_process(argv, cwd=root, name=kind) as client:
        await client.initialize(root, capabilities=_caps(kind))
        uri = await client.open(root / "names.py", "python")
        return [
            [
                await client.request(
                    method,
                    {"textDocument": {"uri": uri}, "position": {"line": line, "character": len("typing.") + 1}},
                    timeout=60,
                )
                for method in METHODS
            ]
            for line in range(1, len(TYPING_NAMES) + 1)
        ]


async def test_every_typing_name_has_pyrights_own_definitions(daemon: DaemonProc, tmp_path: Path) -> None:
    root = write_files(tmp_path / "typing_names", {"names.py": TYPING_FILE})
    for kind in CLIENTS:
        want = await _ask_typing(PYRIGHT, root, kind)
        got = await _ask_typing(daemon.client_argv("pyright"), root, kind)
        for name, mine, its in zip(TYPING_NAMES, want, got, strict=True):
            assert its == mine, (kind, name)
