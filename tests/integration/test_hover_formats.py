"""Each client gets hovers in the format it declared, as the server alone gives them (real clangd and pyright).

The shared server is told the daemon's capabilities, markdown first; an agent toolkit that
declares no `textDocument.hover.contentFormat` (multilspy, Serena's clangd, mcp-language-server)
gets plaintext from a server of its own. A plaintext client and a markdown client hover the same
documented symbol through one daemon, fresh, together, and from the cache; each answer must be
the one the server alone gives that client.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest
from support.daemon_proc import VENV_BIN, DaemonProc
from support.lspclient import LspClient, default_client_capabilities, path_uri
from support.projects import write_files

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

# A comment and a docstring with markup characters, forced line breaks and joined lines.
C_HEADER = (
    "#ifndef UTIL_H\n#define UTIL_H\n"
    "/// Scales a *value* by `factor`, see **docs**.\n"
    "///\n"
    "/// Uses a_b and __init__; 2 * 3 = 6 and <b>tags</b> &amp; entities.\n"
    "/// - item one\n"
    "/// - item two\n"
    "/// \\param value the value\n"
    "int scale(int value, int factor);\n"
    "#endif\n"
)
PY_UTIL = (
    "def scale(value: int, factor: int) -> int:\n"
    '    """Scales a *value* by `factor`, see **docs**.\n'
    "\n"
    "    Uses a_b and __init__; 2 * 3 = 6 and <angle> brackets [x].\n"
    "\n"
    "    Args:\n"
    "        value: the value\n"
    "        factor: the factor\n"
    '    """\n'
    "    return value * factor\n"
)


@dataclass(frozen=True)
class Case:
    server: str
    language: str
    argv: tuple[str, ...]
    files: dict[str, str]
    hovered: str  # the file hovered
    needle: str  # the hover is at the start of this text in that file


CLANGD = Case(
    "clangd",
    "c",
    (str(VENV_BIN / "clangd"),),
    {"compile_flags.txt": "-std=c11\n", "util.h": C_HEADER, "main.c": '#include "util.h"\nint main(void) {}\n'},
    "util.h",
    "scale(int value",
)
PYRIGHT = Case(
    "pyright",
    "python",
    (str(VENV_BIN / "pyright-langserver"), "--stdio"),
    {"demo/__init__.py": "", "demo/util.py": PY_UTIL, "demo/main.py": "from demo.util import scale\n"},
    "demo/util.py",
    "scale(value",
)


@pytest.fixture(params=[CLANGD, PYRIGHT], ids=lambda c: c.server)
def case(request: pytest.FixtureRequest) -> Case:
    param: Case = request.param
    return param


def _caps(markdown: bool) -> dict[str, Any]:
    caps = default_client_capabilities()
    if not markdown:
        del caps["textDocument"]["hover"]  # as multilspy and mcp-language-server declare it
    return caps


def _hover_params(case: Case, root: Path) -> dict[str, Any]:
    text = (root / case.hovered).read_text()
    offset = text.index(case.needle)
    line = text.count("\n", 0, offset)
    column = offset - (text.rfind("\n", 0, offset) + 1)
    return {"textDocument": {"uri": path_uri(root / case.hovered)}, "position": {"line": line, "character": column}}


async def _alone(case: Case, root: Path, *, markdown: bool) -> Any:
    """The hover the server alone answers a client with these capabilities."""
    async with LspClient.over_process(case.argv, cwd=root, name="alone") as client:
        await client.initialize(root, capabilities=_caps(markdown))
        await client.open(root / case.hovered, case.language)
        return await client.request("textDocument/hover", _hover_params(case, root))


def _hover_hits(daemon: DaemonProc, server: str) -> int:
    (instance,) = daemon.instances(server)
    hits: int = instance["cache"]["methods"].get("textDocument/hover", {}).get("hits", 0)
    return hits


async def test_each_client_gets_the_hover_its_server_alone_gives(
    case: Case, daemon: DaemonProc, tmp_path: Path
) -> None:
    root = write_files(tmp_path / case.server, case.files)
    want_markdown = await _alone(case, root, markdown=True)
    want_plain = await _alone(case, root, markdown=False)
    assert want_markdown["contents"]["kind"] == "markdown" and want_plain["contents"]["kind"] == "plaintext"
    assert "value" in want_plain["contents"]["value"]  # the symbol's documentation is there

    argv = daemon.client_argv(case.server)
    params = _hover_params(case, root)
    async with (
        LspClient.over_process(argv, name="editor") as editor,
        LspClient.over_process(argv, name="agent") as agent,
    ):
        await editor.initialize(root, capabilities=_caps(markdown=True))
        await agent.initialize(root, capabilities=_caps(markdown=False))
        for client in (editor, agent):
            await client.open(root / case.hovered, case.language)

        # Together: one server request, each asker its own answer (fresh or coalesced).
        answers: dict[str, Any] = {}

        async def ask(client: LspClient) -> None:
            answers[client.name] = await client.request("textDocument/hover", params)

        async with anyio.create_task_group() as tg:
            tg.start_soon(ask, agent)
            tg.start_soon(ask, editor)
        assert answers == {"editor": want_markdown, "agent": want_plain}

        # From the cache: the editor's answer stored, the agent's served from it once the server is warm.
        served_from_cache = False
        for _ in range(240):
            assert await editor.request("textDocument/hover", params) == want_markdown
            before = _hover_hits(daemon, case.server)
            assert await agent.request("textDocument/hover", params) == want_plain
            if _hover_hits(daemon, case.server) > before:
                served_from_cache = True
                break
            await anyio.sleep(0.25)
        assert served_from_cache
