"""Install pip into a venv made with --without-pip, from pip's wheel on PyPI."""

import json
import runpy
import sys
import tempfile
import urllib.request
from pathlib import Path

INDEX = "https://pypi.org/pypi/pip/json"


def main() -> None:
    """Download pip's newest wheel and run its own installer from the wheel."""
    with urllib.request.urlopen(INDEX, timeout=60) as resp:
        meta = json.load(resp)
    wheel = next(u for u in meta["urls"] if u["filename"].endswith(".whl"))
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / wheel["filename"]
        with urllib.request.urlopen(wheel["url"], timeout=120) as resp:
            path.write_bytes(resp.read())
        sys.path.insert(0, str(path))
        sys.argv = ["pip", "install", "--no-index", str(path)]
        runpy.run_module("pip", run_name="__main__")


if __name__ == "__main__":
    main()
