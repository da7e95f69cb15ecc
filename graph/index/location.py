"""Where a workspace root's index lives on disk."""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
from pathlib import Path


def state_home() -> Path:
    """$XDG_STATE_HOME, or ~/.local/state when unset or not absolute (as the spec says)."""
    value = os.environ.get("XDG_STATE_HOME", "")
    if value and os.path.isabs(value):
        return Path(value)
    return Path.home() / ".local" / "state"


def root_slug(root: Path) -> str:
    """`<last dir name, sanitised>-<12 hex of sha256 of the resolved path>`."""
    resolved = root.resolve()
    name = re.sub(r"[^A-Za-z0-9._-]+", "_", resolved.name).strip("._") or "root"
    digest = hashlib.sha256(os.fsencode(resolved)).hexdigest()[:12]
    return f"{name[:40]}-{digest}"


def default_store_dir(root: Path) -> Path:
    """$XDG_STATE_HOME/lensmux/roots/<slug>-<hash>/ for this root."""
    return state_home() / "lensmux" / "roots" / root_slug(root)


def relative_to_root(root: Path, path: str | Path) -> str | None:
    """The POSIX path of `path` relative to root (given relative or absolute under it), else None."""
    p = Path(os.path.normpath(path))
    if not p.is_absolute():
        rel = p.as_posix()
        return None if rel == ".." or rel.startswith("../") else rel
    for base in (root, root.resolve()):
        with contextlib.suppress(ValueError):
            return p.relative_to(base).as_posix()
    with contextlib.suppress(ValueError, OSError):
        return p.resolve().relative_to(root).as_posix()
    return None
