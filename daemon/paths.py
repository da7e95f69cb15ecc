"""Where the daemon keeps its sockets, state and caches."""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import unquote, urlparse


def default_runtime_dir() -> Path:
    """`$XDG_RUNTIME_DIR/lensmux`, else `/tmp/lensmux-<uid>`."""
    base = os.environ.get("XDG_RUNTIME_DIR")
    if base and Path(base).is_dir():
        return Path(base) / "lensmux"
    return Path(f"/tmp/lensmux-{os.getuid()}")


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
