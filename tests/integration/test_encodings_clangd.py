"""Position encodings with real clangd: each client is spoken to in the encoding it was told.

One editor offers UTF-8 the way Neovim does (LSP 3.17 `general.positionEncodings`
and clangd's `offsetEncoding` extension), a second offers nothing but the
default UTF-16. The first edits a line with non-ASCII text before the edited
name; both must find symbols and hovers where their own encoding puts them,
and after clangd is killed the replayed document must still be the edited one.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Any

import pytest
from support.daemon_proc import DaemonProc, wait_until
from support.lspclient import LspClient, default_client_capabilities

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

# Columns differ in every encoding on these lines: é is 1 UTF-16 unit and 2
# UTF-8 bytes, the emoji 2 UTF-16 units and 4 UTF-8 bytes.
SOURCE = (
    "/* é😀 */ int first(int x) { return x; }\n"
    "/* ü */ int second(void) { return first(2); }\n"
    "int main(void) { return second(); }\n"
)
APPENDED = "int after(void) { return 0; }\n"
EDITED = SOURCE.replace("int first(", "int renamed(").replace("return first(", "return renamed(")


def _units(text: str, encoding: str) -> int:
    if encoding == "utf-8":
        return len(text.encode("utf-8"))
    if encoding == "utf-32":
        return len(text)
    return len(text.encode("utf-16-le")) // 2


def _position(text: str, line: int, column: int, encoding: str) -> dict[str, int]:
    """The LSP position of code-point `column` of `line`, in `encoding`."""
    return {"line": line, "character": _units(text.splitlines()[line][:column], encoding)}


def _column(text: str, position: dict[str, int], encoding: str) -> int:
    """The code-point column an LSP position in `encoding` names."""
    line = text.splitlines()[position["line"]]
    for column in range(len(line) + 1):
        if _units(line[:column], encoding) >= position["character"]:
            return column
    return len(line)


def _announced(result: dict[str, Any], offers: list[str], sent_extension: bool) -> str:
    """The one encoding an InitializeResult tells a client, checked for consistency."""
    encoding = str(result["capabilities"].get("positionEncoding", "utf-16"))
    assert encoding in offers, f"told {encoding!r}, offered {offers}"
    if sent_extension:
        assert result.get("offsetEncoding", encoding) == encoding
    else:
        assert result.get("offsetEncoding", "utf-16") == "utf-16"
    return encoding


def _symbol_columns(symbols: list[dict[str, Any]], text: str, encoding: str) -> dict[str, tuple[int, int]]:
    out: dict[str, tuple[int, int]] = {}
    for sym in symbols:
        start = (sym.get("selectionRange") or sym["location"]["range"])["start"]
        out[sym["name"]] = (start["line"], _column(text, start, encoding))
        out.update(_symbol_columns(sym.get("children", []), text, encoding))
    return out


def _expected_columns(text: str, names: list[str]) -> dict[str, tuple[int, int]]:
    out = {}
    for name in names:
        for number, line in enumerate(text.splitlines()):
            if f"int {name}(" in line:
                out[name] = (number, line.index(f"int {name}(") + 4)
    return out


async def _check_view(client: LspClient, uri: str, text: str, encoding: str) -> None:
    """documentSymbol and hover positions agree with `text` in the client's encoding."""
    symbols = await client.request("textDocument/documentSymbol", {"textDocument": {"uri": uri}}, timeout=60)
    expected = _expected_columns(
        text, ["renamed", "second", "main", "after"] if APPENDED in text else ["renamed", "second", "main"]
    )
    found = _symbol_columns(symbols, text, encoding)
    assert {k: found.get(k) for k in expected} == expected
    line, column = expected["renamed"]
    hover = await client.request(
        "textDocument/hover",
        {"textDocument": {"uri": uri}, "position": _position(text, line, column + 2, encoding)},
        timeout=60,
    )
    assert hover is not None and "renamed" in str(hover["contents"])


def _clangd_pid(daemon: DaemonProc) -> int | None:
    pids = [i["pid"] for i in daemon.instances("clangd") if i["pid"] and i["state"] == "running"]
    return pids[0] if pids else None


async def test_each_client_gets_its_encoding_and_the_replay_matches(daemon: DaemonProc, tmp_path: Path) -> None:
    root = tmp_path / "enc"
    root.mkdir()
    (root / "compile_flags.txt").write_text("-std=c11\n")
    path = root / "enc.c"
    path.write_text(SOURCE, encoding="utf-8")
    utf8_caps = default_client_capabilities()
    utf8_caps["general"] = {"positionEncodings": ["utf-8", "utf-16"]}
    utf8_caps["offsetEncoding"] = ["utf-8", "utf-16"]
    argv = daemon.client_argv("clangd")
    async with LspClient.over_process(argv, name="nvim") as a, LspClient.over_process(argv, name="plain") as b:
        enc_a = _announced(await a.initialize(root, capabilities=utf8_caps), ["utf-8", "utf-16"], True)
        enc_b = _announced(await b.initialize(root), ["utf-16"], False)
        uri = await a.open(path, "c")
        await b.open(path, "c")
        # a renames `first` at both places, bottom first so the ranges stay valid.
        edits = []
        for line in (1, 0):
            column = SOURCE.splitlines()[line].index("first")
            start = _position(SOURCE, line, column, enc_a)
            end = _position(SOURCE, line, column + len("first"), enc_a)
            edits.append({"range": {"start": start, "end": end}, "text": "renamed"})
        await a.change(uri, 2, edits)
        await _check_view(a, uri, EDITED, enc_a)
        await _check_view(b, uri, EDITED, enc_b)

        old = _clangd_pid(daemon)
        assert old is not None
        os.kill(old, signal.SIGKILL)
        wait_until(lambda: _clangd_pid(daemon) not in (None, old), timeout=60, what="clangd restarted")
        # An ASCII edit at the end makes the answers come from the restarted
        # clangd (not the cache), computed on the text the daemon replayed.
        end = {"line": 3, "character": 0}
        await a.change(uri, 3, [{"range": {"start": end, "end": end}, "text": APPENDED}])
        await _check_view(a, uri, EDITED + APPENDED, enc_a)
        await _check_view(b, uri, EDITED + APPENDED, enc_b)
