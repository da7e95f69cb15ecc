"""A client that asks pyright for another language gets pyright in that language (real pyright).

pyright writes its diagnostics in one language per process: `locale` from `initialize`, else its
environment's (adapters/pyright/pyright_locale.py). The daemon's default pyright on a root is
initialized without `locale`; a client whose `locale` yields another language gets a pyright of
its own on that root, initialized with it, and clients whose `locale` yields the default's
("en", "en-US", none, under an English environment) keep sharing the one pyright.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support.daemon_proc import VENV_BIN, DaemonProc, running_daemon
from support.lspclient import LspClient
from support.projects import write_files

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

PYRIGHT = (str(VENV_BIN / "pyright-langserver"), "--stdio")
# An English environment whatever the machine's (pyright reads VSCODE_NLS_CONFIG and LC_ALL
# first; empty counts as unset), for pyright alone and for the daemon's.
ENGLISH_ENV = {"VSCODE_NLS_CONFIG": "", "LC_ALL": "C.UTF-8"}
SOURCE = (
    "def takes(x: int) -> int:\n"
    '    """Takes a number."""\n'
    "    return x\n"
    "\n"
    "\n"
    'takes("a")\n'
    'count: int = "not a number"\n'
    "print(undefined_name)\n"
)
FILES = {"demo/__init__.py": "", "demo/words.py": SOURCE}


@pytest.fixture
def english_daemon(tmp_path: Path) -> Iterator[DaemonProc]:
    with running_daemon(tmp_path / "d", extra_env=ENGLISH_ENV) as proc:
        yield proc


def _analysed(uri: str) -> Any:
    def match(params: Any) -> bool:
        return params.get("uri") == uri and any("not a number" in d["message"] for d in params["diagnostics"])

    return match


async def _words(client: LspClient, path: Path) -> dict[str, Any]:
    """What the client is told of the file: its diagnostics (in line order) and the hover on the call."""
    uri = await client.open(path, "python")
    published = await client.wait_notification("textDocument/publishDiagnostics", _analysed(uri), timeout=90)
    line = SOURCE.count("\n", 0, SOURCE.index('takes("a")'))
    hover = await client.request(
        "textDocument/hover", {"textDocument": {"uri": uri}, "position": {"line": line, "character": 1}}, timeout=60
    )
    diagnostics = sorted(
        published["diagnostics"], key=lambda d: (d["range"]["start"]["line"], d["range"]["start"]["character"])
    )
    return {"diagnostics": diagnostics, "hover": hover}


async def _alone(root: Path, locale: str | None) -> dict[str, Any]:
    async with LspClient.over_process(PYRIGHT, cwd=root, env=ENGLISH_ENV, name=f"alone-{locale}") as client:
        await client.initialize(root, locale=locale)
        return await _words(client, root / "demo/words.py")


async def test_a_german_client_and_one_without_locale_each_get_the_words_of_their_own_pyright(
    english_daemon: DaemonProc, tmp_path: Path
) -> None:
    root = write_files(tmp_path / "words", FILES)
    want = {"de": await _alone(root, "de"), None: await _alone(root, None)}
    # What pyright alone does, seen here so that a pyright that stops doing it fails this test loudly.
    english = [d["message"] for d in want[None]["diagnostics"]]
    german = [d["message"] for d in want["de"]["diagnostics"]]
    assert any("is not assignable" in m for m in english), english
    assert any("nicht zugewiesen" in m for m in german), german

    argv = english_daemon.client_argv("pyright")
    path = root / "demo/words.py"
    got: dict[str | None, dict[str, Any]] = {}
    async with (
        LspClient.over_process(argv, name="none") as none,
        LspClient.over_process(argv, name="german") as german_client,
    ):
        await none.initialize(root)
        await german_client.initialize(root, locale="de")
        got[None] = await _words(none, path)
        got["de"] = await _words(german_client, path)
        languages = sorted((i.get("language") or "") for i in english_daemon.instances("pyright"))
        shown = english_daemon.run_cli("status").stdout
    assert got["de"] == want["de"]
    assert got[None] == want[None]
    # One pyright per language on the root, and `lensmux status` says which one is the German one.
    assert languages == ["", "de"]
    assert "language: de" in shown, shown


async def test_english_clients_share_one_pyright(english_daemon: DaemonProc, tmp_path: Path) -> None:
    root = write_files(tmp_path / "words", FILES)
    argv = english_daemon.client_argv("pyright")
    async with (
        LspClient.over_process(argv, name="en") as en,
        LspClient.over_process(argv, name="en-US") as en_us,
        LspClient.over_process(argv, name="none") as none,
    ):
        await en.initialize(root, locale="en")
        await en_us.initialize(root, locale="en-US")
        await none.initialize(root)
        instances = english_daemon.instances("pyright")
    assert len(instances) == 1, instances
    assert len(instances[0]["clients"]) == 3 and instances[0].get("language") is None
