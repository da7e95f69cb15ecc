"""A cancelled request must not break the shared pyright for everyone (issue 12, point 1).

pyright 1.1.4xx answers every `textDocument/references` after one cancelled
one with -32603 "this._token.cancel is not a function" (see
bench/bench_search_pyright_cancel.py). Through lensmux, whoever cancels gets
RequestCancelled at once, and every other client's Find References still works.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

import anyio
import pytest
from support.daemon_proc import DaemonProc, running_daemon
from support.lspclient import LspClient, LspResponseError
from support.projects import (
    add_session_calls,
    fanout_reference_count,
    fanout_references,
    write_py_fanout_project,
)

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

MODULES = 60
REQUEST_CANCELLED = -32800


def _other_call_in(root: Path, module: int) -> tuple[str, tuple[int, int]]:
    """A call of `other` in one module: a references request that keeps pyright busy a while."""
    return (root / f"pkg/mod{module}.py").as_uri(), (4, 8)


# pyright mishandles a cancel that it reads while still setting the request up,
# which through a daemon happens when the request and its cancel arrive while
# it is busy with something else: another client's Find References. The pauses
# only vary how the two overlap; the test asserts no timing.
OVERLAPS = (0.0, 0.02, 0.05, 0.1, 0.2)


async def _find_references_works(editor: LspClient, uri: str) -> None:
    """Find References never fails, and becomes complete once pyright has found every module."""
    expected = fanout_reference_count(MODULES)
    found: list[Any] = []
    for _ in range(120):
        # An error here is the defect: pyright's references are broken for good.
        found = await editor.request("textDocument/references", fanout_references(uri), timeout=60)
        if len(found) == expected:
            return
    pytest.fail(f"references never reached {expected} locations (last: {len(found)})")


async def test_cancelled_references_leave_find_references_working(daemon: DaemonProc, tmp_path: Path) -> None:
    root = write_py_fanout_project(tmp_path / "fan", MODULES)
    core = root / "pkg/core.py"
    argv = daemon.client_argv("pyright")
    async with (
        LspClient.over_process(argv, name="impatient") as impatient,
        LspClient.over_process(argv, name="editor") as editor,
    ):
        await impatient.initialize(root)
        await editor.initialize(root)
        uri = await impatient.open(core, "python")
        await editor.open(core, "python")
        for module, pause in enumerate(OVERLAPS):
            busy = await editor.start_request(
                "textDocument/references", fanout_references(*_other_call_in(root, module))
            )
            await anyio.sleep(pause)
            pending = await impatient.start_request("textDocument/references", fanout_references(uri))
            await pending.cancel()
            try:
                await pending.result(timeout=60)
            except LspResponseError as exc:
                # Answered at once as cancelled (unless the cache answered first).
                assert exc.code == REQUEST_CANCELLED, exc
            with contextlib.suppress(LspResponseError):
                # pyright itself cancels a Find References when the next one arrives.
                await busy.result(timeout=60)
        await _find_references_works(editor, uri)
        # The one who cancelled is not punished either.
        await _find_references_works(impatient, uri)
    assert "cancel withheld" in daemon.log_text()


async def test_client_leaving_mid_references_leaves_find_references_working(daemon: DaemonProc, tmp_path: Path) -> None:
    root = write_py_fanout_project(tmp_path / "fan", MODULES)
    core = root / "pkg/core.py"
    argv = daemon.client_argv("pyright")
    async with LspClient.over_process(argv, name="editor") as editor:
        await editor.initialize(root)
        uri = await editor.open(core, "python")
        for module, pause in enumerate(OVERLAPS):
            async with LspClient.over_process(argv, name="leaver") as leaver:
                await leaver.initialize(root)
                await leaver.open(core, "python")
                busy = await editor.start_request(
                    "textDocument/references", fanout_references(*_other_call_in(root, module))
                )
                await anyio.sleep(pause)
                await leaver.start_request("textDocument/references", fanout_references(uri))
            # The leaver's bridge is gone with its request in flight: the daemon gives it up.
            with contextlib.suppress(LspResponseError):
                await busy.result(timeout=60)
        await _find_references_works(editor, uri)


async def test_search_expansion_budget_leaves_find_references_working(tmp_path: Path) -> None:
    """`lensmux search` gives up on its references when the expansion budget runs out; editors must not notice."""
    modules = 40
    root = write_py_fanout_project(tmp_path / "fan", modules)
    add_session_calls(root, modules, 10)
    # Short enough that expansion abandons requests pyright is still working on.
    config = "[daemon.search]\nexpansion_budget = 0.05\n"
    with running_daemon(tmp_path / "d", config) as daemon:
        done = daemon.run_cli("index", str(root), "--wait", "--json")
        assert done.returncode == 0, done.stderr
        for query in ("Session", "class Session used by every module", "Session request", "shared"):
            daemon.call("lensmux/hybridSearch", {"query": query, "root": str(root)}, timeout=120)
        async with LspClient.over_process(daemon.client_argv("pyright"), name="editor") as editor:
            await editor.initialize(root)
            uri = await editor.open(root / "pkg/session.py", "python")
            params = {
                "textDocument": {"uri": uri},
                "position": {"line": 0, "character": 6},
                "context": {"includeDeclaration": False},
            }
            # One import and ten calls per module.
            expected = modules * 11
            found: list[Any] = []
            for _ in range(120):
                found = await editor.request("textDocument/references", params, timeout=60)
                if len(found) == expected:
                    break
            assert len(found) == expected
        # The search did give up on requests: left to finish for the cache, or (while pyright was
        # still discovering the workspace, when nothing is cached) shielded from its cancel bug.
        log = daemon.log_text()
        assert "left to finish for the cache" in log or "abandoned by the daemon's own asker; cancel withheld" in log
