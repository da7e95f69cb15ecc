"""Put this folder on PYTHONPATH to learn which modules a lensmux process imported in its life.

With LENSMUX_MODULES_OUT set, every Python process started with that environment writes
the names in `sys.modules` at exit to `$LENSMUX_MODULES_OUT.<pid>`, one a line: the real
`lensmux serve` and `lensmux client` commands, unchanged, say what they loaded
(tests/integration/test_import_footprint.py).
"""

from __future__ import annotations

import atexit
import os
import sys

_OUT = os.environ.get("LENSMUX_MODULES_OUT")


def _write() -> None:
    with open(f"{_OUT}.{os.getpid()}", "w", encoding="utf-8") as out:
        out.write("\n".join(sorted(sys.modules)) + "\n")


if _OUT:
    atexit.register(_write)
