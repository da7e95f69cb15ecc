"""Real documentSymbol results from pyright and clangd, fed through the whole indexer.

The JSON-RPC client here is deliberately tiny and separate from lensmux's own wire
layer, so the index is tested against what the servers really send.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import pytest
from index_fakes import FakeEmbedder
from support.projects import write_files

from lensmux.graph.index import Indexer

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

VENV_BIN = Path(__file__).resolve().parents[4] / ".venv" / "bin"
PYRIGHT = VENV_BIN / "pyright-langserver"
CLANGD = VENV_BIN / "clangd"
REQUEST_TIMEOUT_S = 120.0


class StdioLspClient:
    """Just enough LSP over stdio: requests, notifications, and dull answers to server requests."""

    def __init__(self, process: anyio.abc.Process) -> None:
        self._process = process
        self._next_id = 0
        self._waiting: dict[int, tuple[anyio.Event, list[Any]]] = {}
        self._opened: set[str] = set()

    async def _write(self, message: dict[str, Any]) -> None:
        body = json.dumps({"jsonrpc": "2.0", **message}).encode()
        assert self._process.stdin is not None
        await self._process.stdin.send(b"Content-Length: %d\r\n\r\n" % len(body) + body)

    async def notify(self, method: str, params: Any) -> None:
        await self._write({"method": method, "params": params})

    async def request(self, method: str, params: Any) -> Any:
        self._next_id += 1
        done, box = anyio.Event(), list[Any]()
        self._waiting[self._next_id] = (done, box)
        await self._write({"id": self._next_id, "method": method, "params": params})
        with anyio.fail_after(REQUEST_TIMEOUT_S):
            await done.wait()
        message = box[0]
        assert "error" not in message, message
        return message.get("result")

    async def reader_task(self) -> None:
        assert self._process.stdout is not None
        buffer = b""
        async for data in self._process.stdout:
            buffer += data
            while b"\r\n\r\n" in buffer:
                head, rest = buffer.split(b"\r\n\r\n", 1)
                headers = dict(line.split(": ", 1) for line in head.decode("ascii").split("\r\n"))
                length = int(headers["Content-Length"])
                if len(rest) < length:
                    break
                body, buffer = rest[:length], rest[length:]
                await self._dispatch(json.loads(body))

    async def _dispatch(self, message: dict[str, Any]) -> None:
        if "method" in message and "id" in message:
            result: Any = None
            if message["method"] == "workspace/configuration":
                result = [None] * len(message["params"]["items"])
            await self._write({"id": message["id"], "result": result})
        elif "id" in message and message["id"] in self._waiting:
            done, box = self._waiting.pop(message["id"])
            box.append(message)
            done.set()

    async def document_symbols(self, path: Path, language_id: str, text: str) -> list[dict[str, Any]] | None:
        uri = path.as_uri()
        if uri not in self._opened:
            self._opened.add(uri)
            doc = {"uri": uri, "languageId": language_id, "version": 1, "text": text}
            await self.notify("textDocument/didOpen", {"textDocument": doc})
        result = await self.request("textDocument/documentSymbol", {"textDocument": {"uri": uri}})
        return result if isinstance(result, list) else []


@contextlib.asynccontextmanager
async def language_server(command: list[str], root: Path) -> AsyncIterator[StdioLspClient]:
    """Start a server, initialize it for root, and shut it down (or kill it) afterwards."""
    async with await anyio.open_process(command, cwd=root, stderr=None) as process:
        client = StdioLspClient(process)
        async with anyio.create_task_group() as tg:
            tg.start_soon(client.reader_task)
            capabilities = {
                "textDocument": {"documentSymbol": {"hierarchicalDocumentSymbolSupport": True}},
                "workspace": {"configuration": True, "workspaceFolders": True},
            }
            await client.request(
                "initialize",
                {
                    "processId": None,
                    "rootUri": root.as_uri(),
                    "capabilities": capabilities,
                    "workspaceFolders": [{"uri": root.as_uri(), "name": root.name}],
                },
            )
            await client.notify("initialized", {})
            try:
                yield client
            finally:
                with anyio.move_on_after(10):
                    await client.request("shutdown", None)
                    await client.notify("exit", None)
                    await process.wait()
                if process.returncode is None:
                    process.kill()
                tg.cancel_scope.cancel()


class ServerSymbols:
    """SymbolSource over real servers: pyright for Python, clangd for C and C++."""

    def __init__(self, pyright: StdioLspClient, clangd: StdioLspClient) -> None:
        self._by_language = {"python": pyright, "c": clangd, "cpp": clangd}

    async def document_symbols(self, path: Path, language_id: str, text: str) -> list[dict[str, Any]] | None:
        client = self._by_language.get(language_id)
        return None if client is None else await client.document_symbols(path, language_id, text)


PROJECT = {
    "pyproject.toml": '[project]\nname = "demo"\nversion = "0.1"\n',
    "demo/__init__.py": "",
    "demo/upload.py": '''"""Uploads with retries."""
import time

MAX_RETRIES = 3


class Uploader:
    """Sends blobs."""

    def __init__(self, url: str) -> None:
        self.url = url

    def backoff_send(self, blob: bytes) -> bool:
        attempts = 0
        def wait(n: int) -> None:
            time.sleep(2 ** n)
        while attempts < MAX_RETRIES:
            wait(attempts)
            attempts += 1
        return True


def upload_all(blobs: list[bytes]) -> int:
    uploader = Uploader("http://x")
    return sum(uploader.backoff_send(b) for b in blobs)
''',
    "compile_flags.txt": "-std=c++17\n",
    "native/shapes.cpp": """#include <cmath>

namespace geometry {

class Circle {
public:
    explicit Circle(double r) : radius(r) {}
    double area() const;
private:
    double radius;
};

double Circle::area() const {
    return M_PI * radius * radius;
}

double total_area(const Circle* shapes, int count) {
    double sum = 0;
    for (int i = 0; i < count; ++i) {
        sum += shapes[i].area();
    }
    return sum;
}

}  // namespace geometry
""",
    "native/util.c": "int add(int a, int b) {\n    return a + b;\n}\n",
    "README.md": "# Demo\n\nUploads and shapes.\n",
}


async def test_real_pyright_and_clangd_symbols_through_the_indexer(tmp_path: Path) -> None:
    if not (PYRIGHT.exists() and CLANGD.exists()):
        pytest.skip("language servers are not installed in .venv")
    root = tmp_path / "demo"
    write_files(root, PROJECT)
    async with (
        language_server([str(PYRIGHT), "--stdio"], root) as pyright,
        language_server([str(CLANGD), "--background-index=false", "--log=error"], root) as clangd,
        Indexer(root, tmp_path / "state", FakeEmbedder(), ServerSymbols(pyright, clangd)) as ix,
    ):
        await ix.index_all()
        store = ix.store
        structures = {path: stamp.structure for path, stamp in store.file_stamps().items()}
        assert structures["demo/upload.py"] == "lsp"
        assert structures["native/shapes.cpp"] == "lsp"
        assert structures["README.md"] == "none"

        # pyright: hierarchical symbols, methods qualified by their class, locals dropped.
        py_names = {s.qualified_name: s.kind for s in store.symbols_in_file("demo/upload.py")}
        assert py_names["Uploader"] == "class"
        assert py_names["Uploader.backoff_send"] == "method"
        assert py_names["upload_all"] == "function"
        assert py_names["Uploader.backoff_send.wait"] == "function"
        assert "Uploader.backoff_send.attempts" not in py_names
        inside = store.enclosing_symbol("demo/upload.py", 13)  # `attempts = 0`
        assert inside is not None and inside.qualified_name == "Uploader.backoff_send"
        (chunk,) = store.chunks_for_symbol(inside.id)
        assert chunk.text.startswith("# python demo/upload.py method Uploader.backoff_send\n")
        assert "def backoff_send(self, blob: bytes) -> bool:" in chunk.text
        top = store.chunk(store.keyword_search("backoff send", 1)[0][0])
        assert top is not None and top.name == "Uploader.backoff_send"

        # clangd: namespace, class, out-of-line method definition, free function.
        cpp = {(s.qualified_name, s.kind) for s in store.symbols_in_file("native/shapes.cpp")}
        assert ("geometry", "namespace") in cpp
        assert ("geometry.Circle", "class") in cpp
        assert ("geometry.total_area", "function") in cpp
        assert any(name.endswith("Circle.area") and kind == "method" for name, kind in cpp), cpp
        area_definitions = [s for s in store.lookup_symbols("Circle.area") if s.range.end_line > s.range.start_line]
        assert area_definitions, "the out-of-line definition is found by its qualified suffix"
        chunk_kinds = {(c.kind, c.name) for c in store.chunks_in_file("native/shapes.cpp")}
        assert ("function", "geometry.total_area") in chunk_kinds
        assert ("class", "geometry.Circle") in chunk_kinds
        c_symbols = [(s.name, s.kind) for s in store.symbols_in_file("native/util.c")]
        assert c_symbols == [("add", "function")]
