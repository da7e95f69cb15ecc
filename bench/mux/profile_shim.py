"""Run a Python script with cProfile switched on by SIGUSR1 and written out by SIGUSR2.

    python bench/mux/profile_shim.py OUT.prof SCRIPT [ARGS...]

Profiling only between the two signals keeps start-up (imports, config
parsing) out of a per-message profile. lensmux handles SIGTERM, SIGINT and
SIGHUP itself; the two user signals are free.
"""

from __future__ import annotations

import cProfile
import runpy
import signal
import sys
from types import FrameType

_profiler = cProfile.Profile()
_output: list[str] = []


def _start(signum: int, frame: FrameType | None) -> None:
    _profiler.enable()


def _stop(signum: int, frame: FrameType | None) -> None:
    _profiler.disable()
    _profiler.dump_stats(_output[0])


if __name__ == "__main__":
    _output.append(sys.argv[1])
    signal.signal(signal.SIGUSR1, _start)
    signal.signal(signal.SIGUSR2, _stop)
    sys.argv = sys.argv[2:]
    runpy.run_path(sys.argv[0], run_name="__main__")
