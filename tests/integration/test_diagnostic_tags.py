"""Each client is told pyright's tagged hints only if it declared their tag, as pyright alone tells it (real pyright).

pyright gives unused and unreachable code the tag Unnecessary (1) and a deprecated use the
tag Deprecated (2), and sends such a hint only to a client whose
`publishDiagnostics.tagSupport.valueSet` lists its tag. The shared pyright is told the
daemon's capabilities, which list both; clients that declared none, one or both open the
same file through one daemon, pushed and pulled, and each must be told what pyright alone
tells a client with its capabilities.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from support.daemon_proc import VENV_BIN, DaemonProc
from support.lspclient import LspClient, default_client_capabilities
from support.projects import write_files

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

PYRIGHT = (str(VENV_BIN / "pyright-langserver"), "--stdio")
# One error (so every client is told something once the file is analysed), an unused import
# and unreachable code (Unnecessary), and a call of a deprecated function (Deprecated).
TAGGED = (
    "import os\n"
    "from typing_extensions import deprecated\n"
    "\n"
    "\n"
    '@deprecated("use new")\n'
    "def old() -> int:\n"
    "    return 1\n"
    "\n"
    "\n"
    "def f() -> int:\n"
    "    return old()\n"
    '    print("never")\n'
    "\n"
    "\n"
    'count: int = "not a number"\n'
)
FILES = {"demo/__init__.py": "", "demo/tagged.py": TAGGED}
# What each client lists in tagSupport.valueSet (None: no tagSupport at all, as Serena and
# mcp-language-server declare it).
VALUE_SETS: dict[str, list[int] | None] = {"none": None, "unnecessary": [1], "deprecated": [2], "both": [1, 2]}


def _caps(value_set: list[int] | None, *, pull: bool = False) -> dict[str, Any]:
    caps = default_client_capabilities()
    if value_set is not None:
        caps["textDocument"]["publishDiagnostics"]["tagSupport"] = {"valueSet": value_set}
    if pull:
        caps["textDocument"]["diagnostic"] = {"dynamicRegistration": True, "relatedDocumentSupport": False}
    return caps


def _analysed(uri: str) -> Any:
    def match(params: Any) -> bool:
        return params.get("uri") == uri and any("not a number" in d["message"] for d in params["diagnostics"])

    return match


async def _pushed(client: LspClient, path: Path) -> list[Any]:
    uri = await client.open(path, "python")
    published = await client.wait_notification("textDocument/publishDiagnostics", _analysed(uri), timeout=90)
    diagnostics: list[Any] = published["diagnostics"]
    return diagnostics


async def _pulled(client: LspClient, path: Path) -> list[Any]:
    with anyio.fail_after(60):
        while not any(
            reg.get("method") == "textDocument/diagnostic"
            for m, params in client.server_requests
            if m == "client/registerCapability"
            for reg in params.get("registrations", [])
        ):
            await anyio.sleep(0.05)
    uri = await client.open(path, "python")
    report = await client.request("textDocument/diagnostic", {"textDocument": {"uri": uri}}, timeout=90)
    assert report["kind"] == "full", report
    items: list[Any] = report["items"]
    return items


async def _alone(root: Path, value_set: list[int] | None, *, pull: bool) -> list[Any]:
    async with LspClient.over_process(PYRIGHT, cwd=root, name="alone") as client:
        # pyright asks a pull client to pull again once its settings are read; it exits if refused.
        client.on_server_request("workspace/diagnostic/refresh", lambda _params: None)
        await client.initialize(root, capabilities=_caps(value_set, pull=pull))
        path = root / "demo/tagged.py"
        return _in_order(await (_pulled(client, path) if pull else _pushed(client, path)))


def _in_order(diagnostics: list[Any]) -> list[Any]:
    """pyright's order of one file's diagnostics follows the order its checks ran in, not the file."""
    return sorted(
        diagnostics, key=lambda d: (d["range"]["start"]["line"], d["range"]["start"]["character"], d["message"])
    )


def _tags(diagnostics: list[Any]) -> list[Any]:
    return sorted(tag for d in diagnostics for tag in d.get("tags", []))


@pytest.mark.parametrize("pull", [False, True], ids=["push", "pull"])
async def test_each_client_gets_the_tagged_hints_its_own_pyright_gives(
    daemon: DaemonProc, tmp_path: Path, pull: bool
) -> None:
    root = write_files(tmp_path / "tags", FILES)
    want = {name: await _alone(root, value_set, pull=pull) for name, value_set in VALUE_SETS.items()}
    # What pyright alone does, seen here so that a pyright that stops doing it fails this test loudly.
    assert _tags(want["none"]) == []
    assert _tags(want["both"]) == [1, 1, 2], want["both"]
    assert _tags(want["unnecessary"]) == [1, 1] and _tags(want["deprecated"]) == [2]

    argv = daemon.client_argv("pyright")
    path = root / "demo/tagged.py"
    async with (
        LspClient.over_process(argv, name="both") as both,
        LspClient.over_process(argv, name="none") as none,
        LspClient.over_process(argv, name="unnecessary") as unnecessary,
        LspClient.over_process(argv, name="deprecated") as deprecated,
    ):
        clients = {"both": both, "none": none, "unnecessary": unnecessary, "deprecated": deprecated}
        for name, client in clients.items():
            await client.initialize(root, capabilities=_caps(VALUE_SETS[name], pull=pull))
        got: dict[str, list[Any]] = {}
        for name, client in clients.items():
            got[name] = _in_order(await (_pulled(client, path) if pull else _pushed(client, path)))
    for name in VALUE_SETS:
        assert got[name] == want[name], name
