"""The benchmark package (bench/, at the checkout's top) for tests of its rules: pytest puts only tests/ on sys.path."""

from __future__ import annotations

import sys
from pathlib import Path

_CHECKOUT = str(Path(__file__).resolve().parents[2])
if _CHECKOUT not in sys.path:
    sys.path.insert(0, _CHECKOUT)
