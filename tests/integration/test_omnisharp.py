"""OmniSharp through the daemon, when an OmniSharp executable is installed.

No registry this project can reach ships OmniSharp, so this runs only where
one is on PATH; its launch command, root discovery and registration replay
are covered without it (tests/unit/test_adapters_config.py,
tests/integration/test_routing_fake.py).
"""

from __future__ import annotations

import shutil
from pathlib import Path

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
