"""Benchmarks of lensmux; run as `python -m bench.<module>` from the checkout.

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
