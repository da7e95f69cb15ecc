"""OmniSharp through the daemon, when an OmniSharp executable is installed.

No registry this project can reach ships OmniSharp, so this runs only where
one is on PATH; its launch command, root discovery and registration replay
are covered without it (tests/unit/test_adapters_config.py,
tests/integration/test_routing_fake.py).
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

import anyio
import pytest
from support.daemon_proc import DaemonProc
from support.lspclient import LspClient

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.slow,
    pytest.mark.skipif(
        shutil.which("OmniSharp") is None, reason="OmniSharp is not installed (no registry we reach ships it)"
    ),
]

CSPROJ = """<Project Sdk="Microsoft.NET.Sdk">
  <PropertyGroup><OutputType>Exe</OutputType><TargetFramework>net8.0</TargetFramework></PropertyGroup>
</Project>
"""
PROGRAM = """namespace Demo;

public static class Calc
{
    public static int Add(int a, int b) => a + b;
    public static int Scale(int v, int f) { var t = 0; for (var i = 0; i < f; i++) t = Add(t, v); return t; }
}
"""


async def test_two_clients_share_one_omnisharp(daemon: DaemonProc, tmp_path: Path) -> None:
    root = tmp_path / "cs"
    root.mkdir()
    (root / "Demo.csproj").write_text(CSPROJ)
    (root / "Calc.cs").write_text(PROGRAM)
    argv = daemon.client_argv("omnisharp")
    async with LspClient.over_process(argv, name="a") as a, LspClient.over_process(argv, name="b") as b:
        await a.initialize(root, timeout=180)
        await b.initialize(root, timeout=180)
        instances = daemon.instances("omnisharp")
        assert len(instances) == 1 and len(instances[0]["clients"]) == 2
        uri = await a.open(root / "Calc.cs", "csharp")
        symbols = await a.request("textDocument/documentSymbol", {"textDocument": {"uri": uri}}, timeout=180)
        assert "Calc" in str(symbols)


def _told(client: LspClient) -> list[Any]:
    """Log and show messages and progress the client was told, tokens and pids aside."""
    told: list[Any] = []
    for method, params in client.notifications:
        if method in ("window/logMessage", "window/showMessage"):
            told.append((method, params.get("type"), re.sub(r"\d+", "#", str(params.get("message")))))
        elif method == "$/progress":
            told.append((method, params.get("value", {}).get("kind"), params.get("value", {}).get("title")))
    return told


async def test_a_late_joiner_is_told_omnisharps_start_as_from_its_own(daemon: DaemonProc, tmp_path: Path) -> None:
    """What OmniSharp alone tells a client until its project is loaded, a late joiner is told too, once."""
    roots = []
    for side in ("alone", "shared"):
        root = tmp_path / side / "cs"
        root.mkdir(parents=True)
        (root / "Demo.csproj").write_text(CSPROJ)
        (root / "Calc.cs").write_text(PROGRAM)
        roots.append(root)
    omnisharp = shutil.which("OmniSharp")
    assert omnisharp is not None
    argv = [omnisharp, "-lsp", "-s", str(roots[0] / "Demo.csproj")]
    async with LspClient.over_process(argv, cwd=roots[0], name="alone") as alone:
        await alone.initialize(roots[0], timeout=180)
        uri = await alone.open(roots[0] / "Calc.cs", "csharp")
        await alone.request("textDocument/documentSymbol", {"textDocument": {"uri": uri}}, timeout=180)
        await anyio.sleep(5)  # what it says after its first answer is not start-up: only what came before counts
        reference = _told(alone)
    shared = daemon.client_argv("omnisharp")
    async with LspClient.over_process(shared, name="first") as first:
        await first.initialize(roots[1], timeout=180)
        uri = await first.open(roots[1] / "Calc.cs", "csharp")
        await first.request("textDocument/documentSymbol", {"textDocument": {"uri": uri}}, timeout=180)
        async with LspClient.over_process(shared, name="late") as late:
            await late.initialize(roots[1], timeout=180)
            await anyio.sleep(1)
            told = _told(late)
    normalised = [tuple(str(x).replace(str(roots[1]), str(roots[0])) for x in item) for item in told]
    expected = [tuple(str(x) for x in item) for item in reference]
    assert normalised == expected[: len(normalised)] and normalised, (normalised, expected)
