"""Answers computed while pyright is still discovering the workspace are never served later (issue 12, point 8).

Right after it starts, pyright answers Find References from the files it has
found so far. That answer is what the asker would get from pyright alone at
that moment, but once pyright alone would answer completely, every client,
the one that asked early and one that connects later, must get the complete
answer; and the later one still gets it from the shared cache.
"""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from support.daemon_proc import DaemonProc
from support.lspclient import LspClient
from support.projects import fanout_reference_count, fanout_references, write_py_fanout_project

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

MODULES = 200


def _reference_hits(daemon: DaemonProc) -> int:
    (instance,) = daemon.instances("pyright")
    methods = instance["cache"]["methods"]
    hits: int = methods.get("textDocument/references", {}).get("hits", 0)
    return hits


async def test_early_partial_references_are_not_served_after_discovery(daemon: DaemonProc, tmp_path: Path) -> None:
    root = write_py_fanout_project(tmp_path / "fan", MODULES)
    core = root / "pkg/core.py"
    expected = fanout_reference_count(MODULES)
    argv = daemon.client_argv("pyright")
    async with LspClient.over_process(argv, name="early") as early:
        await early.initialize(root)
        uri = await early.open(core, "python")
        # Asked right after start: pyright may not have found the other modules yet.
        first = await early.request("textDocument/references", fanout_references(uri), timeout=60)
        counts = [len(first)]
        # pyright alone becomes complete within seconds; so must the shared answer.
        for _ in range(240):
            found = await early.request("textDocument/references", fanout_references(uri), timeout=60)
            counts.append(len(found))
            if len(found) == expected:
                break
            await anyio.sleep(0.25)
        assert counts[-1] == expected, f"answers stayed partial: {sorted(set(counts))} of {expected}"

        hits_before = _reference_hits(daemon)
        async with LspClient.over_process(argv, name="late") as late:
            await late.initialize(root)
            await late.open(core, "python")
            found = await late.request("textDocument/references", fanout_references(uri), timeout=60)
            assert len(found) == expected
            # Sharing still pays: the newcomer's complete answer came from the cache.
            for _ in range(240):
                if _reference_hits(daemon) > hits_before:
                    break
                # The early client's answers may all predate the end of the warm-up.
                found = await late.request("textDocument/references", fanout_references(uri), timeout=60)
                assert len(found) == expected
            assert _reference_hits(daemon) > hits_before


async def test_configuration_change_invalidates_cross_file_answers(daemon: DaemonProc, tmp_path: Path) -> None:
    """workspace/didChangeConfiguration may change what pyright answers: nothing cached before it is served."""
    root = write_py_fanout_project(tmp_path / "fan", 3)
    core = root / "pkg/core.py"
    argv = daemon.client_argv("pyright")
    async with LspClient.over_process(argv, name="editor") as editor:
        await editor.initialize(root)
        uri = await editor.open(core, "python")
        for _ in range(240):
            before = _reference_hits(daemon)
            await editor.request("textDocument/references", fanout_references(uri), timeout=60)
            if _reference_hits(daemon) > before:
                break
            await anyio.sleep(0.25)
        else:
            pytest.fail("references were never answered from the cache")
        await editor.notify("workspace/didChangeConfiguration", {"settings": {}})
        before = _reference_hits(daemon)
        await editor.request("textDocument/references", fanout_references(uri), timeout=60)
        assert _reference_hits(daemon) == before
