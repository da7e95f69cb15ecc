"""A client asking for a sub-project of a repository gets the server it would have alone on that root.

pyright reads its configuration, resolves imports and finds workspace symbols and references from
its root, so the same session on `repo/sub` answers otherwise than on `repo` (bench.mux.root_policy
measures every layout). Each client must get what pyright alone on its own root gives; clients
asking for the same root, editors or the assistant, still share one pyright. clangd answers the
same from either root, so its clients below one marker keep sharing one clangd.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from support.daemon_proc import VENV_BIN, DaemonProc
from support.lspclient import LspClient
from support.mcp_session import mcp_client, ok
from support.projects import write_files

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

PYRIGHT = (str(VENV_BIN / "pyright-langserver"), "--stdio")

# `import common` resolves only from repo/ (a top-level module there), `localpkg` only from
# repo/sub/ (pyright adds its root's src/ to the search paths); `twin_name` is defined in both
# halves and `sub_function` is called from outside sub/.
NESTED = {
    ".git/HEAD": "ref: refs/heads/main\n",
    "pyproject.toml": '[project]\nname = "repo"\n',
    "common.py": "def common_helper() -> int:\n    return 1\n",
    "other/__init__.py": "",
    "other/names.py": "def twin_name() -> str:\n    return 'other'\n",
    "other/consumer.py": "from sub.core import sub_function\n\n\ndef consume() -> int:\n    return sub_function(2)\n",
    "sub/core.py": (
        "def sub_function(x: int) -> int:\n    return x * 2\n\n\ndef twin_name() -> str:\n    return 'sub'\n"
    ),
    "sub/src/localpkg/__init__.py": "def local_thing() -> int:\n    return 4\n",
    "sub/main.py": (
        "import common\n"
        "from core import sub_function\n"
        "from localpkg import local_thing\n"
        "\n"
        "\n"
        "def run() -> int:\n"
        "    return common.common_helper() + sub_function(local_thing())\n"
    ),
}


def _at(path: Path, needle: str) -> dict[str, Any]:
    text = path.read_text()
    index = text.index(needle)
    line = text.count("\n", 0, index)
    return {
        "textDocument": {"uri": path.as_uri()},
        "position": {"line": line, "character": index - (text.rfind("\n", 0, index) + 1)},
    }


def _places(result: Any) -> list[str]:
    items = result if isinstance(result, list) else [result] if result else []
    return sorted(f"{i['uri']}:{i['range']['start']['line']}" for i in items)


class Session:
    """An editor's session on the sub-project's files: what it is told, comparable across runs."""

    def __init__(self, client: LspClient, repo: Path) -> None:
        self.client = client
        self.main = repo / "sub/main.py"
        self.core = repo / "sub/core.py"

    async def open(self) -> None:
        """Open the two files, as an editor would, and wait for the first report on main.py."""
        uri = await self.client.open(self.main, "python")
        await self.client.open(self.core, "python")
        await self.client.wait_notification("textDocument/publishDiagnostics", lambda p: p["uri"] == uri, timeout=120)

    async def observe(self) -> dict[str, Any]:
        """Diagnostics of main.py, import resolution, references and workspace symbols."""
        uri = self.main.as_uri()
        reports = [p for p in self.client.notifications_of("textDocument/publishDiagnostics") if p["uri"] == uri]
        request = self.client.request
        references = {**_at(self.core, "sub_function"), "context": {"includeDeclaration": True}}
        return {
            "diagnostics": sorted(d["message"] for d in reports[-1]["diagnostics"]),
            "common_helper": _places(await request("textDocument/definition", _at(self.main, "common_helper()"))),
            "local_thing": _places(await request("textDocument/definition", _at(self.main, "local_thing()"))),
            "references": _places(await request("textDocument/references", references, timeout=60)),
            "symbols": sorted(s["location"]["uri"] for s in await request("workspace/symbol", {"query": "twin_name"})),
        }


async def _alone(root: Path, repo: Path) -> dict[str, Any]:
    """The session against pyright started directly on `root`, once it has found its files."""
    async with LspClient.over_process(PYRIGHT, cwd=root, name="alone") as client:
        await client.initialize(root)
        await client.wait_notification(
            "window/logMessage", lambda p: p["message"].startswith(("Found ", "No source files")), timeout=120
        )
        session = Session(client, repo)
        await session.open()
        await anyio.sleep(1.5)
        observed = await session.observe()
        await client.shutdown_and_exit()
    return observed


async def _becomes(session: Session, expected: dict[str, Any]) -> dict[str, Any]:
    """What the session sees once the shared server has settled (bounded): expected, or the last seen."""
    observed: dict[str, Any] = {}
    for _ in range(40):
        observed = await session.observe()
        if observed == expected:
            break
        await anyio.sleep(0.5)
    return observed


async def test_a_client_asking_for_a_sub_project_gets_pyright_alone_on_it(daemon: DaemonProc, tmp_path: Path) -> None:
    repo = write_files(tmp_path / "repo", NESTED)
    sub = repo / "sub"
    alone = {"sub": await _alone(sub, repo), "repo": await _alone(repo, repo)}
    # The two roots do answer differently, in every aspect compared.
    assert all(alone["sub"][aspect] != alone["repo"][aspect] for aspect in alone["sub"])
    argv = daemon.client_argv("pyright")
    async with (
        LspClient.over_process(argv, name="editor") as editor,
        LspClient.over_process(argv, name="agent") as agent,
    ):
        await editor.initialize(repo)
        await agent.initialize(sub)
        sessions = {"repo": Session(editor, repo), "sub": Session(agent, repo)}
        for session in sessions.values():
            await session.open()
        for name, session in sessions.items():
            assert await _becomes(session, alone[name]) == alone[name], f"the client on {name}/"
        assert sorted(i["root"] for i in daemon.instances("pyright")) == [str(repo), str(sub)]
        # An assistant on the same sub-project shares the agent's pyright and is told the same.
        async with mcp_client(daemon, sub) as assistant:
            _, data = await ok(assistant, "diagnostics", file="main.py")
            assert sorted(d["message"] for d in data["diagnostics"]) == alone["sub"]["diagnostics"]
        assert len(daemon.instances("pyright")) == 2


C_NESTED = {
    ".git/HEAD": "ref: refs/heads/main\n",
    "compile_flags.txt": "-Iinclude\n-Isub\n",
    "include/shared.h": "#pragma once\nint shared_helper(int v);\n",
    "sub/main.c": '#include "shared.h"\n\nint sub_function(int v) { return shared_helper(v) * 2; }\n',
}


async def test_clangd_clients_below_one_marker_share_one_clangd(daemon: DaemonProc, tmp_path: Path) -> None:
    repo = write_files(tmp_path / "crepo", C_NESTED)
    argv = daemon.client_argv("clangd")
    async with (
        LspClient.over_process(argv, name="editor") as editor,
        LspClient.over_process(argv, name="agent") as agent,
    ):
        await editor.initialize(repo)
        await agent.initialize(repo / "sub")
        uri = await agent.open(repo / "sub/main.c", "c")
        report = await agent.wait_notification("textDocument/publishDiagnostics", lambda p: p["uri"] == uri)
        # The flags at the repository apply to a file below it whatever the root: no "file not found".
        assert report["diagnostics"] == []
        assert [i["root"] for i in daemon.instances("clangd")] == [str(repo)]


async def test_a_client_naming_its_root_only_by_root_uri_gets_pyrights_default_workspace(
    daemon: DaemonProc, tmp_path: Path
) -> None:
    """pyright ignores rootUri: alone it gives such a client its '<default>' workspace, so lensmux does too.

    That client's imports do not resolve, where an editor naming the same directory as its
    workspace folder gets them resolved; the two do not share a server.
    """
    project = write_files(
        tmp_path / "proj", {"pkg/__init__.py": "", "pkg/util.py": "def util() -> int:\n    return 1\n"}
    )
    # Below the root, so that only a workspace root resolves the import (pyright also looks beside the file).
    main = project / "app" / "main.py"
    main.parent.mkdir()
    main.write_text("from pkg.util import util\n\nVALUE = util()\n")

    async def session(argv: list[str], root_uri_only: bool) -> tuple[list[str], list[Any]]:
        async with LspClient.over_process(argv, cwd=project, name="rooturi" if root_uri_only else "folders") as c:
            params: dict[str, Any] = {
                "processId": None,
                "rootUri": project.as_uri(),
                "capabilities": {"window": {"workDoneProgress": False}},
            }
            if not root_uri_only:
                params["workspaceFolders"] = [{"uri": project.as_uri(), "name": "proj"}]
            await c.request("initialize", params)
            await c.notify("initialized", {})
            uri = await c.open(main, "python")
            published = await c.wait_notification("textDocument/publishDiagnostics", lambda p: p.get("uri") == uri)
            lines = [p["message"] for m, p in c.notifications if m == "window/logMessage"]
            await c.shutdown_and_exit()
        return [line for line in lines if line.startswith("Starting service")], published["diagnostics"]

    alone = await session(list(PYRIGHT), root_uri_only=True)
    assert alone[0] == ['Starting service instance "<default>"'] and alone[1], alone
    argv = daemon.client_argv("pyright")
    assert await session(argv, root_uri_only=True) == alone
    folders = await session(argv, root_uri_only=False)
    assert folders == (['Starting service instance "proj"'], [])
    assert len(daemon.instances("pyright")) == 2
