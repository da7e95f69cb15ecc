"""The bind walk waits while a root is being indexed, as learning does (daemon/mux/lifecycle/bind_walk.py).

A second worktree indexed right after its repository: the index run's documentSymbol starts the
new root's pyright, whose bind walk then parsed and bound every workspace file while the run
embedded its new texts on the same cores (issue 23). The run is held in the middle by the
daemon's fault-injection knob LENSMUX_FAULT_INDEX_HOLD (graph/index/builder/runs/order.py,
FaultHold): it prepares one file, whose documentSymbol starts pyright, then no more while the
hold file exists; what the walk does meanwhile does not depend on how fast indexing goes.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from support.daemon_proc import DaemonProc, running_daemon, wait_until

pytestmark = pytest.mark.slow

# After discovery the walk waits 0.3 s without client messages; this is several times that.
SETTLE_S = 3.0
MODULES = 6


def _project(root: Path) -> Path:
    root.mkdir(parents=True)
    (root / "pyproject.toml").write_text('[project]\nname = "walkwait"\n')
    for n in range(MODULES):
        (root / f"m{n}.py").write_text(f"class C{n}:\n    def f(self, x: int) -> int:\n        return x + {n}\n")
    return root


def _walk_state(daemon: DaemonProc) -> str | None:
    instances = daemon.instances("pyright")
    return instances[0].get("prebind") if instances else None


def test_the_walk_waits_for_a_full_index_run_and_walks_after_it(tmp_path: Path) -> None:
    root = _project(tmp_path / "proj").resolve()
    hold = tmp_path / "hold"
    hold.write_text("held\n")
    env = {"LENSMUX_FAULT_INDEX_HOLD": f"1:{hold}"}
    with running_daemon(tmp_path / "d", "[daemon.search]\nlearn_graph = false\n", extra_env=env) as daemon:
        started = daemon.run_cli("index", str(root), "--json")
        assert started.returncode == 0, started.stderr
        # The run's one file was asked of pyright, which then discovered its workspace.
        wait_until(lambda: "workspace discovered" in daemon.log_text(), timeout=120, what="pyright's discovery")
        time.sleep(SETTLE_S)
        assert "bind walk: asking" not in daemon.log_text()
        assert _walk_state(daemon) == "pending"
        hold.unlink()
        finished = daemon.run_cli("index", str(root), "--wait", "--json", timeout=120)
        assert finished.returncode == 0, finished.stderr
        wait_until(lambda: _walk_state(daemon) == "done", timeout=60, what="bind walk done after the run")
    # Every file was answered by the run's documentSymbol in this pyright process: none is asked twice.
    log = daemon.log_text()
    assert f"binding {MODULES} workspace files ahead" in log
    assert "bind walk: asking" not in log
