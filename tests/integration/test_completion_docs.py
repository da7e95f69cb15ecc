"""Completion documentation in the format each client listed, as pyright alone writes it (real pyright).

pyright words an item's documentation by `completionItem.documentationFormat`: the first of
markdown and plaintext listed, plaintext when neither (eglot, Helix, Serena, the MCP bridges).
The shared pyright is told markdown. A markdown client and two plaintext ones complete and
resolve the same items through one daemon: a function (type detail and docstring) and a module
(its docstring alone); each must get what a pyright of its own gives it. A client without
labelDetailsSupport also gets an auto-import item's labelDetails: pyright alone sends them anyway.
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
CALLS = (
    "def scale_value(value: int, factor: int = 2) -> int:\n"
    '    """Scales a value_name by *factor* <times>.\n'
    "\n"
    "    :param factor: how many times\n"
    '    """\n'
    "    return value * factor\n"
)
USE = "import demo_pkg\nfrom demo_pkg import calls\n\ncalls.scale_v\nimport demo_p\nscale_val\n"
FILES = {
    "demo_pkg/__init__.py": '"""The *demo* package: helpers_for tests."""\n',
    "demo_pkg/calls.py": CALLS,
    "use.py": USE,
}
# (line, character) where completion is asked, and the label whose item is resolved.
ASKS = {
    "function": ((3, len("calls.scale_v")), "scale_value"),
    "module": ((4, len("import demo_p")), "demo_pkg"),
    "auto-import": ((5, len("scale_val")), "scale_value"),
}
FORMS: dict[str, list[str] | None] = {
    "markdown": ["markdown", "plaintext"],
    "plaintext": ["plaintext"],
    "no format": None,
}
# A client that declared no labelDetailsSupport: pyright alone still sends an auto-import
# item's labelDetails (its module), which the daemon must not fold into the label.
NO_LABEL_DETAILS = "plaintext, no labelDetailsSupport"


def _caps(name: str) -> dict[str, Any]:
    caps = default_client_capabilities()
    formats = FORMS.get(name, ["plaintext"])
    item: dict[str, Any] = {"resolveSupport": {"properties": ["documentation", "detail"]}}
    if name != NO_LABEL_DETAILS:
        item["labelDetailsSupport"] = True
    if formats is not None:
        item["documentationFormat"] = formats
    caps["textDocument"]["completion"] = {"completionItem": item}
    return caps


async def _answers(client: LspClient, root: Path) -> dict[str, Any]:
    await client.open(root / "use.py", "python")
    out: dict[str, Any] = {}
    for name, ((line, character), label) in ASKS.items():
        position = {"line": line, "character": character}
        params = {"textDocument": {"uri": path_uri(root / "use.py")}, "position": position}
        answer = await client.request("textDocument/completion", params, timeout=60)
        items = answer["items"] if isinstance(answer, dict) else answer
        item = next(i for i in items if i["label"] == label)
        out[name] = item
        out[name + " resolved"] = await client.request("completionItem/resolve", item, timeout=60)
    return out


async def test_each_client_gets_completion_documentation_in_its_own_format(daemon: DaemonProc, tmp_path: Path) -> None:
    root = write_files(tmp_path / "comp", FILES)
    want: dict[str, Any] = {}
    for name in (*FORMS, NO_LABEL_DETAILS):
        async with LspClient.over_process(PYRIGHT, cwd=root, name="alone") as client:
            await client.initialize(root, capabilities=_caps(name))
            want[name] = await _answers(client, root)
    # pyright alone writes these differently: what this test is about.
    for ask in ("function resolved", "module resolved", "auto-import resolved"):
        assert want["markdown"][ask]["documentation"]["kind"] == "markdown", want["markdown"][ask]
        assert want["plaintext"][ask]["documentation"]["kind"] == "plaintext", want["plaintext"][ask]
    assert "value_name by *factor* <times>" in want["plaintext"]["function resolved"]["documentation"]["value"]
    assert want["plaintext"]["auto-import resolved"]["documentation"]["value"].startswith("from demo_pkg.calls import")
    assert "labelDetails" in want[NO_LABEL_DETAILS]["auto-import"], want[NO_LABEL_DETAILS]["auto-import"]

    argv = daemon.client_argv("pyright")
    for name in (*FORMS, NO_LABEL_DETAILS):
        async with LspClient.over_process(argv, name=name) as client:
            await client.initialize(root, capabilities=_caps(name))
            got = await _answers(client, root)
        for ask in want[name]:
            # `data` is the server's own, opaque to a client (the shared pyright's differs: snippets).
            assert _shown(got[ask]) == _shown(want[name][ask]), (name, ask)


def _shown(item: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in item.items() if k != "data"}
