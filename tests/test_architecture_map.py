"""ARCHITECTURE.md's code map names only paths that exist."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# A backticked token that names a file or folder of the checkout, with an optional `:symbol`.
_PATH = re.compile(r"`((?:daemon|adapters|graph|tests|bench|lsp-configs|systemd|scripts|docs)/[\w./-]*)(?::[\w.]+)?`")


def _named_paths() -> list[str]:
    return sorted(set(_PATH.findall((ROOT / "ARCHITECTURE.md").read_text(encoding="utf-8"))))


def _ignored() -> set[str]:
    """Folders git ignores (outputs the map mentions, such as bench/out/)."""
    lines = (ROOT / ".gitignore").read_text(encoding="utf-8").splitlines()
    return {line.strip().lstrip("/").rstrip("/") for line in lines if line.strip() and not line.startswith("#")}


def test_every_path_in_the_code_map_exists() -> None:
    named = _named_paths()
    assert len(named) > 20, named  # the pattern still finds the map
    ignored = _ignored()
    missing = [p for p in named if p.rstrip("/") not in ignored and not (ROOT / p.rstrip("/")).exists()]
    assert missing == []


def test_every_daemon_subpackage_is_in_the_code_map() -> None:
    named = set(_named_paths())
    packages = [p for p in (ROOT / "daemon").iterdir() if (p / "__init__.py").exists()]
    assert len(packages) >= 4
    assert [p.name for p in packages if f"daemon/{p.name}/" not in named] == []
