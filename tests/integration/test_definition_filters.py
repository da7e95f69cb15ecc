"""A client without `textDocument.declaration` gets every definition pyright alone gives it, in order (real pyright).

pyright answers `textDocument/definition` with the source files only (and declaration with the
stubs only) for a client that declared `textDocument.declaration`, and with every declaration,
stubs and sources in its own order, for one that did not (Helix, Serena, the MCP bridges). The
shared pyright is told no such capability: its whole list is cached once and filtered for each
client that declared it. Clients with and without it, one of them also declaring
`linkSupport`, ask through one daemon, one after the other and all at once (joining each
other's requests), and each must get what pyright alone gives a client with its capabilities.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from support.daemon_proc import VENV_BIN, DaemonProc
from support.lspclient import LspClient, capabilities_declaring, path_uri
from support.projects import write_files

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

PYRIGHT = (str(VENV_BIN / "pyright-langserver"), "--stdio")
MAIN = (
    "import json\n"
    "import json as j\n"
    "import os.path\n"
    "import subprocess\n"
    "from json import JSONDecoder\n"
    "\n"
    "from demo.boxes import Box\n"
    "\n"
    "\n"
    "def local_fn() -> int:\n"
    "    return 1\n"
    "\n"
    "\n"
    "text = json.dumps({})\n"
    "decoder = JSONDecoder()\n"
    "local_fn()\n"
    'subprocess.check_output(["true"])\n'
    'j.loads("1")\n'
    "copy = text\n"
    "json\n"
    "decoder.parse_float\n"
    'os.path.join("a", "b")\n'
    "Box().size\n"
)
# A workspace module with a stub beside it: a property with a setter (two stub declarations,
# each mapped to the source's pair).
BOXES_PY = (
    "class Box:\n"
    "    @property\n"
    "    def size(self):\n"
    "        return 1\n"
    "\n"
    "    @size.setter\n"
    "    def size(self, value):\n"
    "        pass\n"
)
BOXES_PYI = (
    "class Box:\n"
    "    @property\n"
    "    def size(self) -> int: ...\n"
    "    @size.setter\n"
    "    def size(self, value: int) -> None: ...\n"
)
FILES = {"demo/__init__.py": "", "demo/main.py": MAIN, "demo/boxes.py": BOXES_PY, "demo/boxes.pyi": BOXES_PYI}
# Where each question is asked: the line's text and the name within it.
QUESTIONS = {
    "stub and source function": ("text = json.dumps({})", "dumps"),
    "class with a stub": ("decoder = JSONDecoder()", "JSONDecoder"),
    "source only": ("local_fn()", "local_fn"),
    "overloads in stubs": ('subprocess.check_output(["true"])', "check_output"),
    "import alias": ('j.loads("1")', "j"),
    "local variable": ("copy = text", "text"),
    "module": ("json", "json"),
    "attribute": ("decoder.parse_float", "parse_float"),
    "last overload resolved": ('os.path.join("a", "b")', "join"),
    "property with a setter in a stub": ("Box().size", "size"),
}
METHODS = ("textDocument/definition", "textDocument/declaration")
# None: the client declared no `textDocument.declaration` (everything else as an editor's); pyright
# counts an empty object as declared.
CLIENTS: dict[str, dict[str, Any] | None] = {
    "with declaration": {"linkSupport": False},
    "with declaration, empty": {},
    "without declaration": None,
    "without declaration, links": None,
}


def _caps(name: str) -> dict[str, Any]:
    caps = capabilities_declaring(CLIENTS[name])
    if name.endswith("links"):
        caps["textDocument"]["definition"] = {"linkSupport": True}
    return caps


def _params(root: Path, question: str) -> dict[str, Any]:
    line_text, name = QUESTIONS[question]
    line = MAIN.split("\n").index(line_text)
    return {
        "textDocument": {"uri": path_uri(root / "demo/main.py")},
        "position": {"line": line, "character": line_text.index(name) + 1},
    }


async def _ask_all(client: LspClient, root: Path) -> dict[tuple[str, str], Any]:
    return {
        (question, method): await client.request(method, _params(root, question), timeout=60)
        for question in QUESTIONS
        for method in METHODS
    }


async def _alone(root: Path, name: str) -> dict[tuple[str, str], Any]:
    async with LspClient.over_process(PYRIGHT, cwd=root, name="alone") as client:
        await client.initialize(root, capabilities=_caps(name))
        await client.open(root / "demo/main.py", "python")
        return await _ask_all(client, root)


def _files(answer: Any) -> list[str]:
    return [location["uri"].rsplit("/", 1)[-1] for location in answer or []]


async def test_each_client_gets_the_definitions_its_own_pyright_gives(daemon: DaemonProc, tmp_path: Path) -> None:
    root = write_files(tmp_path / "defs", FILES)
    want = {name: await _alone(root, name) for name in CLIENTS}
    # pyright alone answers these differently: what this test is about.
    dumps = ("stub and source function", "textDocument/definition")
    assert _files(want["with declaration"][dumps]) == ["__init__.py"], want["with declaration"][dumps]
    assert _files(want["without declaration"][dumps]) == ["__init__.pyi", "__init__.py"], want["without declaration"]
    size = ("property with a setter in a stub", "textDocument/declaration")
    assert _files(want["without declaration"][size]) == ["boxes.pyi", "boxes.py", "boxes.py", "boxes.pyi"]
    # Plain Locations whatever the client declared of links.
    assert want["without declaration, links"] == want["without declaration"]
    assert want["with declaration, empty"] == want["with declaration"]

    argv = daemon.client_argv("pyright")
    async with (
        LspClient.over_process(argv, name="with") as with_decl,
        LspClient.over_process(argv, name="without") as without_decl,
        LspClient.over_process(argv, name="links") as links,
        LspClient.over_process(argv, name="empty") as empty,
    ):
        clients = {
            "with declaration": with_decl,
            "with declaration, empty": empty,
            "without declaration": without_decl,
            "without declaration, links": links,
        }
        for name, client in clients.items():
            await client.initialize(root, capabilities=_caps(name))
            await client.open(root / "demo/main.py", "python")
        one_by_one = {name: await _ask_all(client, root) for name, client in clients.items()}
        at_once: dict[str, dict[tuple[str, str], Any]] = {}

        async def ask(name: str) -> None:
            at_once[name] = await _ask_all(clients[name], root)

        async with anyio.create_task_group() as tg:
            for name in clients:
                tg.start_soon(ask, name)
    for name in CLIENTS:
        for key in want[name]:
            assert one_by_one[name][key] == want[name][key], (name, key)
            assert at_once[name][key] == want[name][key], (name, key)
