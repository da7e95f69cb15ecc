"""Code actions reach a client in the shape clangd alone gives it: literals, or Commands for a client without them.

clangd announces code action kinds, and answers CodeAction literals, only to a client that declared
`codeActionLiteralSupport`; to others (agent toolkits such as multilspy and Serena's SolidLSP declare
no codeAction capability) it announces `codeActionProvider: true` and answers Commands
(`clangd.applyFix` with the edit, "Apply fix: ..." for a quickfix; a tweak's own command).
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
from support.daemon_proc import VENV_BIN, DaemonProc
from support.lspclient import LspClient, default_client_capabilities
from support.projects import write_c_project

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

BROKEN = "\n".join(
    [
        '#include "util.h"',
        "static int twice(int v) { return add(v, v); }",
        "int use(void) {",
        "    int bad = twic(3); return bad;",
        "}",
        "",
    ]
)
LITERALS = {"codeActionLiteralSupport": {"codeActionKind": {"valueSet": ["quickfix", "refactor", "info"]}}}


def _caps(literals: bool) -> dict[str, Any]:
    caps = default_client_capabilities()
    caps["textDocument"].pop("codeAction", None)
    if literals:
        caps["textDocument"]["codeAction"] = copy.deepcopy(LITERALS)
    return caps


async def _session(argv: list[str], root: Path, literals: bool, name: str) -> tuple[Any, list[Any], list[Any]]:
    async with LspClient.over_process(argv, cwd=root, name=name) as client:
        result = await client.initialize(root, capabilities=_caps(literals))
        uri = await client.open(root / "src" / "q.c", "c", BROKEN)
        published = await client.wait_notification(
            "textDocument/publishDiagnostics", lambda p: p.get("uri") == uri and p.get("diagnostics"), timeout=60
        )
        diagnostic = published["diagnostics"][0]
        fixes = await client.request(
            "textDocument/codeAction",
            {"textDocument": {"uri": uri}, "range": diagnostic["range"], "context": {"diagnostics": [diagnostic]}},
        )
        line = BROKEN.split("\n")[1]
        start = line.index("add(v, v)")
        span = {"start": {"line": 1, "character": start}, "end": {"line": 1, "character": start + 9}}
        tweaks = await client.request(
            "textDocument/codeAction", {"textDocument": {"uri": uri}, "range": span, "context": {"diagnostics": []}}
        )
        await client.shutdown_and_exit()
    return result["capabilities"].get("codeActionProvider"), fixes, tweaks


@pytest.mark.parametrize("literals", [False, True], ids=["commands", "literals"])
async def test_code_actions_come_as_from_clangd_alone(daemon: DaemonProc, tmp_path: Path, literals: bool) -> None:
    alone_root = write_c_project(tmp_path / "alone" / "c")
    shared_root = write_c_project(tmp_path / "shared" / "c")
    provider, fixes, tweaks = await _session([str(VENV_BIN / "clangd")], alone_root, literals, "alone")
    assert fixes and tweaks, "clangd alone offered nothing to compare"
    shared = await _session(daemon.client_argv("clangd"), shared_root, literals, "shared")
    alone = (provider, fixes, tweaks)
    text = repr(alone).replace(str(alone_root), str(shared_root))
    assert repr(shared) == text
