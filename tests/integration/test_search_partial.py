"""`lensmux search` while its root is still being indexed: an answer now, from where the user is, saying how much.

The run is held in the middle by the daemon's fault-injection knob LENSMUX_FAULT_INDEX_HOLD
(graph/index/builder/runs/order.py, FaultHold): it prepares as many files as an editor holds open and
the directory the search runs from holds, then no more while the hold file exists. What the search sees then does
not depend on how fast indexing goes; removing the file lets the run finish.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import anyio
import pytest
from support.daemon_proc import LENSMUX, DaemonProc, running_daemon, wait_until
from support.lspclient import LspClient

pytestmark = [pytest.mark.slow, pytest.mark.anyio]

# More files than one transaction holds (IndexConfig.commit_files is 64), the searched
# directory's sorting last: in walk order it would be indexed last.
OTHER_FILES = 150
HERE = "zz_here"
OPENED = f"lib/mod_{OTHER_FILES - 1:03}.py"  # last in walk order
OPENED_NAME = f"compute_value_{OTHER_FILES - 1}"
LEDGER = '''def reconcile_quarterly_ledger(entries: list[float], opening: float) -> float:
    """Reconcile the quarterly ledger: the opening balance plus every entry."""
    return opening + sum(entries)
'''


def _project(root: Path) -> Path:
    (root / "lib").mkdir(parents=True)
    (root / HERE).mkdir()
    (root / "pyproject.toml").write_text('[project]\nname = "partial"\n')
    for i in range(OTHER_FILES):
        (root / "lib" / f"mod_{i:03}.py").write_text(
            f"def compute_value_{i}(value: int) -> int:\n    return value * {i} + 1\n\n\n"
            f"class Counter{i}:\n    def bump(self) -> int:\n        return compute_value_{i}({i})\n"
        )
    (root / HERE / "ledger.py").write_text(LEDGER)
    (root / HERE / "audit.py").write_text("def audit_trail(name: str) -> str:\n    return name.upper()\n")
    return root


def _search(daemon: DaemonProc, cwd: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [LENSMUX, "search", "reconcile the quarterly ledger", "--no-autostart", "--runtime-dir",
         str(daemon.runtime_dir), *extra],
        cwd=cwd, env=daemon.env, capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL,
    )  # fmt: skip


def _status(daemon: DaemonProc, root: Path) -> dict[str, Any]:
    status: dict[str, Any] = daemon.call("lensmux/indexStatus", {"root": str(root)})
    return status


async def test_a_search_during_indexing_answers_from_where_it_ran_and_says_how_much(tmp_path: Path) -> None:
    root = _project(tmp_path / "proj").resolve()
    hold = tmp_path / "hold"
    hold.write_text("held\n")
    # The file an editor holds open, and the two of the directory the search runs from.
    env = {"LENSMUX_FAULT_INDEX_HOLD": f"3:{hold}"}
    with running_daemon(tmp_path / "d", "[daemon.search]\nlearn_graph = false\n", extra_env=env) as daemon:
        async with LspClient.over_process(daemon.client_argv("pyright")) as editor:
            await editor.initialize(root)
            uri = await editor.open(root / OPENED, "python")
            # Answered once the daemon has taken the didOpen in: it knows the editor holds the file.
            await editor.request("textDocument/documentSymbol", {"textDocument": {"uri": uri}})
            await anyio.to_thread.run_sync(_while_held_then_after, daemon, root, hold)


def _while_held_then_after(daemon: DaemonProc, root: Path, hold: Path) -> None:
    here = root / HERE
    # Nothing is indexed: the command starts the run and answers once its directory is indexed.
    first = _search(daemon, here)
    assert first.returncode == 0, first.stderr
    assert f"{HERE}/ledger.py:1" in first.stdout, first.stdout
    lines = [line for line in first.stderr.splitlines() if "still being indexed: this answer covers" in line]
    assert len(lines) == 1 and f"({HERE}/ first)" in lines[0], first.stderr
    status = _status(daemon, root)
    assert status["running"] and status["files_done"] == 3, status
    shown = subprocess.run(
        [LENSMUX, "status", "--runtime-dir", str(daemon.runtime_dir)],
        env=daemon.env, capture_output=True, text=True, timeout=60, check=True,
    ).stdout  # fmt: skip
    assert f"searches cover {int(status['coverage'] * 100)}% of the files" in shown, shown

    partial = _search(daemon, here, "--json")
    assert partial.returncode == 0, partial.stderr
    response = json.loads(partial.stdout)
    assert response["coverage"] == pytest.approx(3 / (OTHER_FILES + 2), abs=0.001)
    assert any(s["file_path"].startswith(f"{HERE}/") for s in response["ranked_symbols"]), response
    assert any("still being indexed" in w for w in response["warnings"])
    # The file open in the editor was indexed with them, though it comes last in walk order.
    opened = daemon.call("lensmux/hybridSearch", {"query": OPENED_NAME, "root": str(root)}, timeout=120)
    assert any(s["file_path"] == OPENED for s in opened["ranked_symbols"]), opened

    hold.unlink()
    wait_until(lambda: not _status(daemon, root)["running"], timeout=600, what="the run to finish")
    done = _search(daemon, here, "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["coverage"] == 1.0
    assert "still being indexed" not in done.stderr
