"""Each client gets pyright's signature help in the form it declared, as pyright alone gives it (real pyright).

pyright words its signature help by `signatureInformation.parameterInformation.labelOffsetSupport`
(parameter labels as offsets, else as text), `signatureInformation.activeParameterSupport`
(the answer's own activeParameter) and `signatureInformation.documentationFormat` (the
docstring in markdown or plaintext); the shared pyright is told all three, markdown first. Clients that declared
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
    '    """Scales a value_name by *factor* <times>.\n'
    "\n"
    "    :param sep: put between the copies\n"
    '    """\n'
    "    return value\n"
    "\n"
    "\n"
    'scale("x", 3, )\n'
)
FILES = {"demo/__init__.py": "", "demo/calls.py": CALLS}
MARKDOWN = ["markdown", "plaintext"]
FORMS: dict[str, tuple[bool, bool, list[str] | None]] = {
    "both": (True, True, MARKDOWN),
    "offsets": (True, False, MARKDOWN),
    "active": (False, True, MARKDOWN),
    "neither": (False, False, MARKDOWN),
    # eglot, Helix, the MCP bridges: no markdown listed, or no format at all.
    "both, plaintext": (True, True, ["plaintext"]),
    "neither, no format": (False, False, None),
}


def _caps(offsets: bool, active: bool, formats: list[str] | None) -> dict[str, Any]:
    caps = default_client_capabilities()
    info: dict[str, Any] = {} if formats is None else {"documentationFormat": formats}
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


async def _alone(root: Path, offsets: bool, active: bool, formats: list[str] | None) -> Any:
    async with LspClient.over_process(PYRIGHT, cwd=root, name="alone") as client:
        await client.initialize(root, capabilities=_caps(offsets, active, formats))
        await client.open(root / "demo/calls.py", "python")
        return await client.request("textDocument/signatureHelp", _params(root), timeout=60)


async def test_each_client_gets_the_signature_help_its_own_pyright_gives(daemon: DaemonProc, tmp_path: Path) -> None:
    root = write_files(tmp_path / "sig", FILES)
    want = {name: await _alone(root, *form) for name, form in FORMS.items()}
    # pyright alone answers these four differently: what this test is about.
    assert want["both"]["activeParameter"] != want["neither"].get("activeParameter"), want
    assert isinstance(want["both"]["signatures"][1]["parameters"][2]["label"], list)
    assert want["neither"]["signatures"][1]["parameters"][2]["label"] == 'sep: str = "é€😀"'
    assert want["both"]["signatures"][1]["documentation"]["kind"] == "markdown", want["both"]
    plain = want["both, plaintext"]["signatures"][1]["documentation"]
    assert plain["kind"] == "plaintext" and "value_name by *factor* <times>" in plain["value"], plain

    argv = daemon.client_argv("pyright")
    got: dict[str, Any] = {}
    for name, form in FORMS.items():
        async with LspClient.over_process(argv, name=name) as client:
            await client.initialize(root, capabilities=_caps(*form))
            await client.open(root / "demo/calls.py", "python")
            got[name] = await client.request("textDocument/signatureHelp", _params(root), timeout=60)
    for name in FORMS:
        assert got[name] == want[name], name
