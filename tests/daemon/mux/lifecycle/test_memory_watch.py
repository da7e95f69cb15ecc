"""Memory is measured over a server's whole process group."""

from __future__ import annotations

import os
import signal
import subprocess
import time

from lensmux.daemon.mux.lifecycle.memory_watch import group_rss


def test_group_rss_counts_every_process_of_the_group() -> None:
    # A wrapper with children, like the PyPI pyright entry point and its node process.
    proc = subprocess.Popen(["sh", "-c", "sleep 30 & sleep 30 & wait"], start_new_session=True)
    try:
        deadline = time.monotonic() + 10
        rss, count = group_rss(proc.pid)
        while count < 3 and time.monotonic() < deadline:
            time.sleep(0.05)
            rss, count = group_rss(proc.pid)
        assert count == 3
        assert rss > 0
        alone, _ = group_rss(proc.pid)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    assert alone > 0
    # SIGKILL is delivered asynchronously: the children may take a moment to die.
    deadline = time.monotonic() + 10
    while group_rss(proc.pid) != (0, 0) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert group_rss(proc.pid) == (0, 0)
