"""`lensmux search` while its root is still being indexed: an answer now, from where the user is, saying how much.

The run is held in the middle by the daemon's fault-injection knob LENSMUX_FAULT_INDEX_HOLD
(graph/index/order.py, FaultHold): it prepares as many files as the directory the search
runs from holds, then no more while the hold file exists. What the search sees then does
not depend on how fast indexing goes; removing the file lets the run finish.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from support.daemon_proc import LENSMUX, DaemonProc, running_daemon, wait_until

pytestmark = pytest.mark.slow

# More files than one transaction holds (IndexConfig.commit_files is 64), the searched
# directory's sorting last: in walk order it would be indexed last.
OTHER_FILES = 150
HERE = "zz_here"
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


def test_a_search_during_indexing_answers_from_where_it_ran_and_says_how_much(tmp_path: Path) -> None:
    root = _project(tmp_path / "proj").resolve()
    here = root / HERE
    hold = tmp_path / "hold"
    hold.write_text("held\n")
    env = {"LENSMUX_FAULT_INDEX_HOLD": f"2:{hold}"}
    with running_daemon(tmp_path / "d", "[daemon.search]\nlearn_graph = false\n", extra_env=env) as daemon:
        # Nothing is indexed: the command starts the run and answers once its directory is indexed.
        first = _search(daemon, here)
        assert first.returncode == 0, first.stderr
        assert f"{HERE}/ledger.py:1" in first.stdout, first.stdout
        lines = [line for line in first.stderr.splitlines() if "still being indexed: this answer covers" in line]
        assert len(lines) == 1, first.stderr
        status = _status(daemon, root)
        assert status["running"] and status["files_done"] < OTHER_FILES, status
        shown = subprocess.run(
            [LENSMUX, "status", "--runtime-dir", str(daemon.runtime_dir)],
            env=daemon.env, capture_output=True, text=True, timeout=60, check=True,
        ).stdout  # fmt: skip
        assert f"searches cover {int(status['coverage'] * 100)}% of the files" in shown, shown

        partial = _search(daemon, here, "--json")
        assert partial.returncode == 0, partial.stderr
        response = json.loads(partial.stdout)
        assert 0 < response["coverage"] < 1, response["coverage"]
        assert response["coverage"] == pytest.approx(status["files_done"] / (OTHER_FILES + 2), abs=0.01)
        assert any(s["file_path"].startswith(f"{HERE}/") for s in response["ranked_symbols"]), response
        assert any("still being indexed" in w for w in response["warnings"])

        hold.unlink()
        wait_until(lambda: not _status(daemon, root)["running"], timeout=600, what="the run to finish")
        done = _search(daemon, here, "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["coverage"] == 1.0
    assert "still being indexed" not in done.stderr
