"""Where the daemon keeps its sockets, state and caches."""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path
from urllib.parse import unquote, urlparse


def runtime_dir_candidates() -> list[Path]:
    """Where a daemon's sockets may be, most likely first.

    `$XDG_RUNTIME_DIR/lensmux`, then `/run/user/<uid>/lensmux` (what
    `$XDG_RUNTIME_DIR` is in a login session: tools started with a minimal
    environment, like MCP clients' stdio servers, must find the same daemon),
    then `/tmp/lensmux-<uid>`.
    """
    out: list[Path] = []
    base = os.environ.get("XDG_RUNTIME_DIR")
    if base and Path(base).is_dir():
        out.append(Path(base) / "lensmux")
    session = Path(f"/run/user/{os.getuid()}")
    if session.is_dir() and os.access(session, os.W_OK) and session / "lensmux" not in out:
        out.append(session / "lensmux")
    out.append(Path(f"/tmp/lensmux-{os.getuid()}"))
    return out


def default_runtime_dir() -> Path:
    """The first of `runtime_dir_candidates()`: where a new daemon binds its sockets."""
    return runtime_dir_candidates()[0]


def control_socket(runtime_dir: Path) -> Path:
    """The control socket's path."""
    return runtime_dir / "lensmux.sock"


def server_socket(runtime_dir: Path, server: str) -> Path:
    """A server's socket path."""
    return runtime_dir / f"{server}.sock"


def uri_to_path(uri: str) -> Path | None:
    """The local path of a `file:` URI, or None for any other scheme."""
    parsed = urlparse(uri)
    if parsed.scheme != "file":
        return None
    return Path(unquote(parsed.path))


@lru_cache(maxsize=8192)
def file_key(uri: str) -> str:
    """One name per file however a client or a server spells its URI (escapes, `..`, symlinks)."""
    path = uri_to_path(uri)
    return os.path.realpath(path) if path is not None else uri
