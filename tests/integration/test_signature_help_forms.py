"""Each client gets pyright's signature help in the form it declared, as pyright alone gives it (real pyright).

pyright words its signature help by `signatureInformation.parameterInformation.labelOffsetSupport`
(parameter labels as offsets, else as text) and `signatureInformation.activeParameterSupport`
(the answer's own activeParameter); the shared pyright is told both. Clients that declared
both, either or neither ask through one daemon, and each must get what pyright alone gives a
client with its capabilities.
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
# Overloads: several signatures, the active one chosen by the arguments; a non-ASCII default
# so that the offsets are UTF-16 units.
CALLS = (
    "from typing import overload\n"
    "\n"
    "\n"
    "@overload\n"
    "def scale(value: int, factor: int = 2) -> int: ...\n"
    "@overload\n"
    'def scale(value: str, factor: int = 2, sep: str = "é€😀") -> str: ...\n'
    'def scale(value: object, factor: int = 2, sep: str = "é€😀") -> object:\n'
    '    """Scales a value."""\n'
    "    return value\n"
    "\n"
    "\n"
    'scale("x", 3, )\n'
)
FILES = {"demo/__init__.py": "", "demo/calls.py": CALLS}
FORMS: dict[str, tuple[bool, bool]] = {
    "both": (True, True),
    "offsets": (True, False),
    "active": (False, True),
    "neither": (False, False),
}


def _caps(offsets: bool, active: bool) -> dict[str, Any]:
    caps = default_client_capabilities()
    info: dict[str, Any] = {"documentationFormat": ["markdown", "plaintext"]}
    if offsets:
        info["parameterInformation"] = {"labelOffsetSupport": True}
    if active:
        info["activeParameterSupport"] = True
    caps["textDocument"]["signatureHelp"] = {"signatureInformation": info}
    return caps


def _params(root: Path) -> dict[str, Any]:
    line = CALLS.count("\n") - 1
    return {
        "textDocument": {"uri": path_uri(root / "demo/calls.py")},
        "position": {"line": line, "character": len('scale("x", 3, ')},
        "context": {"triggerKind": 2, "triggerCharacter": ",", "isRetrigger": False},
    }


async def _alone(root: Path, offsets: bool, active: bool) -> Any:
    async with LspClient.over_process(PYRIGHT, cwd=root, name="alone") as client:
        await client.initialize(root, capabilities=_caps(offsets, active))
        await client.open(root / "demo/calls.py", "python")
        return await client.request("textDocument/signatureHelp", _params(root), timeout=60)


async def test_each_client_gets_the_signature_help_its_own_pyright_gives(daemon: DaemonProc, tmp_path: Path) -> None:
    root = write_files(tmp_path / "sig", FILES)
    want = {name: await _alone(root, *form) for name, form in FORMS.items()}
    # pyright alone answers these four differently: what this test is about.
    assert want["both"]["activeParameter"] != want["neither"].get("activeParameter"), want
    assert isinstance(want["both"]["signatures"][1]["parameters"][2]["label"], list)
    assert want["neither"]["signatures"][1]["parameters"][2]["label"] == 'sep: str = "é€😀"'

    argv = daemon.client_argv("pyright")
    got: dict[str, Any] = {}
    for name, form in FORMS.items():
        async with LspClient.over_process(argv, name=name) as client:
            await client.initialize(root, capabilities=_caps(*form))
            await client.open(root / "demo/calls.py", "python")
            got[name] = await client.request("textDocument/signatureHelp", _params(root), timeout=60)
    for name in FORMS:
        assert got[name] == want[name], name
