"""`lensmux mcp` end to end: the SDK's client, a real daemon, real pyright and clangd."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.daemon_proc import DaemonProc
from support.mcp_session import NINE, call, mcp_client, ok

pytestmark = [pytest.mark.slow, pytest.mark.anyio]


async def test_lists_the_nine_tools_with_output_schemas(daemon: DaemonProc, py_project: Path) -> None:
    async with mcp_client(daemon, py_project) as client:
        tools = (await client.list_tools()).tools
    assert {t.name for t in tools} == NINE
    assert all(t.output_schema and t.output_schema["type"] == "object" for t in tools)


async def test_python_project_navigation(daemon: DaemonProc, py_project: Path) -> None:
    util_before = (py_project / "demo/util.py").read_bytes()
    async with mcp_client(daemon, py_project) as client:
        text, data = await ok(client, "find_definition", symbol="scale")
        assert data["locations"][0]["path"] == "demo/util.py" and data["locations"][0]["line"] == 5
        assert "demo/util.py:5  def scale(value: int, factor: int) -> int:" in text
        # The same by position: `scale` in `return scale(add(1, 2), 3)` on line 6 of demo/main.py.
        _, data = await ok(client, "find_definition", file="demo/main.py", line=6, column=16)
        assert (data["locations"][0]["path"], data["locations"][0]["line"]) == ("demo/util.py", 5)

        text, data = await ok(client, "find_references", symbol="add")
        places = {(r["path"], r["line"]) for r in data["locations"]}
        assert {("demo/util.py", 1), ("demo/util.py", 8), ("demo/main.py", 6)} <= places
        assert "demo/main.py:6  return scale(add(1, 2), 3)" in text

        text, data = await ok(client, "hover", symbol="add")
        assert "int" in data["contents"]

        text, data = await ok(client, "call_hierarchy", symbol="add", direction="incoming")
        assert {"scale", "compute"} <= {c["name"] for c in data["calls"]}

        text, data = await ok(client, "rename_preview", symbol="add", new_name="plus")
        assert "+def plus(a: int, b: int) -> int:" in data["diff"]
        assert "+        return scale(plus(1, 2), 3)" in data["diff"]
        assert {f["path"] for f in data["files"]} == {"demo/util.py", "demo/main.py"}

        text, data = await ok(client, "document_symbols", file="demo/main.py")
        assert {"Calculator", "compute", "main"} <= {s["name"] for s in data["symbols"]}

        text, data = await ok(client, "workspace_symbols", query="scale")
        assert any(s["name"] == "scale" and s["path"] == "demo/util.py" for s in data["symbols"])

        (py_project / "demo/bad.py").write_text('from demo.util import add\n\nvalue: int = add("a", 1)\n')
        text, data = await ok(client, "diagnostics", file="demo/bad.py")
        assert any(d["line"] == 3 and d["severity"] == "error" for d in data["diagnostics"]), text
        assert "demo/bad.py:3:" in text
    # The preview wrote nothing.
    assert (py_project / "demo/util.py").read_bytes() == util_before


async def test_c_project_navigation(daemon: DaemonProc, c_project: Path) -> None:
    before = {p: p.read_bytes() for p in c_project.rglob("*.[ch]")}
    async with mcp_client(daemon, c_project) as client:
        # The definition is the body in util.c, not the declaration in util.h.
        text, data = await ok(client, "find_definition", symbol="add")
        assert (data["locations"][0]["path"], data["locations"][0]["line"]) == ("src/util.c", 3), text
        # From the call in main.c (line 4: `    return scale(add(1, 2), 3);`, `add` at column 18).
        text, data = await ok(client, "find_definition", file="src/main.c", line=4, column=18)
        assert ("src/util.c", 3) in {(r["path"], r["line"]) for r in data["locations"]}, text

        _, data = await ok(client, "find_references", symbol="scale")
        assert {("src/main.c", 4), ("src/util.c", 7)} <= {(r["path"], r["line"]) for r in data["locations"]}

        _, data = await ok(client, "hover", symbol="scale")
        assert "int" in data["contents"]

        _, data = await ok(client, "call_hierarchy", symbol="add")
        assert {"scale", "compute"} <= {c["name"] for c in data["calls"]}

        _, data = await ok(client, "rename_preview", symbol="scale", new_name="multiply")
        assert "+int multiply(int value, int factor) {" in data["diff"]

        _, data = await ok(client, "document_symbols", file="src/util.c")
        assert {"add", "scale"} <= {s["name"] for s in data["symbols"]}

        _, data = await ok(client, "workspace_symbols", query="scale")
        assert any(s["name"] == "scale" for s in data["symbols"])

        (c_project / "src/bad.c").write_text('#include "util.h"\nint broken(void) { return add(1); }\n')
        text, data = await ok(client, "diagnostics", file="src/bad.c")
        assert any(d["line"] == 2 and d["severity"] == "error" for d in data["diagnostics"]), text
    assert {p: p.read_bytes() for p in before} == before


async def test_bad_inputs_are_tool_errors_and_the_session_goes_on(daemon: DaemonProc, py_project: Path) -> None:
    (py_project / "demo/other.py").write_text("def add(x: str) -> str:\n    return x\n")
    async with mcp_client(daemon, py_project) as client:
        text, _, is_error = await call(client, "document_symbols", file="demo/missing.py")
        assert is_error and "no such file" in text
        text, _, is_error = await call(client, "find_definition", symbol="no_such_function_anywhere")
        assert is_error and "not found" in text
        text, _, is_error = await call(client, "find_definition", symbol="add")
        assert is_error and "ambiguous" in text
        assert "demo/util.py:1" in text and "demo/other.py:1" in text
        text, _, is_error = await call(client, "hover", file="/etc/hostname", line=1, column=1)
        assert is_error and "outside the workspace root" in text
        text, _, is_error = await call(client, "hover", file="demo/util.py", line=999, column=1)
        assert is_error and "line must be" in text
        # The ambiguity resolved as the message says.
        _, data = await ok(client, "find_definition", symbol="add", file="demo/other.py")
        assert data["locations"][0]["path"] == "demo/other.py"


async def test_columns_count_characters_not_utf16_units(daemon: DaemonProc, py_project: Path) -> None:
    # 𝄞 is two UTF-16 code units: a naive column would land two characters off.
    (py_project / "demo/music.py").write_text(
        'from demo.util import add\n\nclef = "𝄞𝄞𝄞"; total = add(1, 2)\n', encoding="utf-8"
    )
    line = 'clef = "𝄞𝄞𝄞"; total = add(1, 2)'
    async with mcp_client(daemon, py_project) as client:
        _, data = await ok(client, "find_definition", file="demo/music.py", line=3, column=line.index("add") + 1)
        assert (data["locations"][0]["path"], data["locations"][0]["line"]) == ("demo/util.py", 1)
        _, data = await ok(client, "find_references", symbol="add", file="demo/util.py")
        music = [r for r in data["locations"] if r["path"] == "demo/music.py" and r["line"] == 3]
        assert music and music[0]["column"] == line.index("add") + 1


async def test_a_definition_with_a_stub_beside_its_source_is_the_source(daemon: DaemonProc, py_project: Path) -> None:
    # The shared pyright answers the whole list (stub and source); the tools ask as a client that
    # declared declaration, to which pyright's definition is the source alone.
    (py_project / "demo/boxes.py").write_text("class Box:\n    size = 1\n", encoding="utf-8")
    (py_project / "demo/boxes.pyi").write_text("class Box:\n    size: int\n", encoding="utf-8")
    (py_project / "demo/shelf.py").write_text("from demo.boxes import Box\n\nshelf = Box()\n", encoding="utf-8")
    async with mcp_client(daemon, py_project) as client:
        _, data = await ok(client, "find_definition", file="demo/shelf.py", line=3, column=len("shelf = B"))
    assert [(row["path"], row["line"]) for row in data["locations"]] == [("demo/boxes.py", 1)]
