"""Benchmarks of lensmux, one subpackage per question; run as `python -m bench.<package>.<module>`.

`mux/` measures the multiplexer (overhead, the hop floor, profiles, load and
cache), `index/` the semantic index, `search/` the hybrid search. The modules
at this level serve all three: `daemon_launch` (the benchmark daemon),
`fetch_corpus` (pinned PyPI sdists), `stats` (summaries, process counters,
machine and code description), `report` (markdown pieces) and `runner` (the
command-line, result and saving conventions). bench/README.md maps each
question to its command and to its section of docs/benchmarks.md.

The benchmarks drive lensmux with the test suite's independent LSP client
(`tests/support`), so the measuring side shares no code with the daemon; that
folder is put on the import path here, before any benchmark module imports it.
"""

from __future__ import annotations

import sys
from pathlib import Path

CHECKOUT = Path(__file__).resolve().parent.parent
OUT_DIR = CHECKOUT / "bench" / "out"

_TESTS = str(CHECKOUT / "tests")
if _TESTS not in sys.path:
    sys.path.insert(0, _TESTS)
