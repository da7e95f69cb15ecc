"""The test client's defaults satisfy a real server: pyright-langserver."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from support.lspclient import LspClient

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

PYRIGHT = Path(sys.executable).parent / "pyright-langserver"

SOURCE = """\
class Square:
    def area(self) -> int:
        return 4


def total(side: int) -> int:
    return side * 4


broken: int = "not a number"
"""


def symbol_names(symbols: list[dict[str, Any]]) -> set[str]:
    return {symbol["name"] for symbol in symbols}


async def test_pyright_answers_symbols_and_diagnostics_with_client_defaults(
    tmp_path: Path,
) -> None:
    source = tmp_path / "shapes.py"
    source.write_text(SOURCE, encoding="utf-8")
    argv = [str(PYRIGHT), "--stdio"]
    async with LspClient.over_process(argv, cwd=tmp_path, name="pyright") as client:
        result = await client.initialize(tmp_path)
        assert result["capabilities"]["documentSymbolProvider"]
        uri = await client.open(source, "python")
        symbols = await client.request("textDocument/documentSymbol", {"textDocument": {"uri": uri}})
        assert {"Square", "total", "broken"} <= symbol_names(symbols)
        square = next(symbol for symbol in symbols if symbol["name"] == "Square")
        assert symbol_names(square["children"]) == {"area"}  # hierarchical, as we asked
        diagnostics = await client.wait_notification(
            "textDocument/publishDiagnostics",
            lambda params: params["uri"] == uri and bool(params["diagnostics"]),
        )
        assert any(d["range"]["start"]["line"] == 9 for d in diagnostics["diagnostics"])
        # pyright pulls its settings; the default answer (None per item) must satisfy it.
        assert "workspace/configuration" in [method for method, _ in client.server_requests]
        await client.shutdown_and_exit()
        with anyio.fail_after(60):
            await client.closed.wait()
    assert client.protocol_errors == []
