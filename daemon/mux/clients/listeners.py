"""Unix socket listeners: private directory, 0600 sockets, same-uid peers only."""

from __future__ import annotations

import errno
import logging
import os
import socket
import stat
import struct
from pathlib import Path

import anyio
from anyio.abc import SocketAttribute, SocketListener, SocketStream

log = logging.getLogger(__name__)

_UCRED = struct.Struct("3i")


class ListenerError(Exception):
    """A socket could not be set up."""


class DaemonAlreadyRunning(ListenerError):
    """Another daemon answers on the socket."""


def prepare_runtime_dir(path: Path) -> None:
    """Create the runtime directory 0700 and refuse one that others can reach."""
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    info = path.lstat()
    if not stat.S_ISDIR(info.st_mode):
        raise ListenerError(f"{path} is not a directory")
    if info.st_uid != os.getuid():
        raise ListenerError(f"{path} belongs to uid {info.st_uid}, not to us ({os.getuid()})")
    mode = stat.S_IMODE(info.st_mode)
    if mode & 0o077:
        # The sockets' own mode and SO_PEERCRED protect them too; the directory is the first wall.
        log.warning("%s was mode %04o, open to other users; making it 0700", path, mode)
        os.chmod(path, 0o700)


def _clear_stale(path: Path) -> None:
    if not path.exists():
        return
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.connect(str(path))
    except OSError as exc:
        if exc.errno in (errno.ECONNREFUSED, errno.ENOENT, errno.ENOTSOCK):
            path.unlink(missing_ok=True)
            return
        raise ListenerError(f"{path}: {exc}") from exc
    else:
        raise DaemonAlreadyRunning(f"a lensmux daemon already listens on {path}")
    finally:
        probe.close()


async def bind(path: Path) -> SocketListener:
    """Listen on `path` with mode 0600, replacing a stale socket file."""
    _clear_stale(path)
    try:
        return await anyio.create_unix_listener(path, mode=0o600)
    except OSError as exc:
        raise ListenerError(f"cannot listen on {path}: {exc}") from exc


def peer_credentials(stream: SocketStream) -> tuple[int, int, int] | None:
    """(pid, uid, gid) of the connected peer, from SO_PEERCRED."""
    try:
        sock = stream.extra(SocketAttribute.raw_socket)
        data = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _UCRED.size)
    except (OSError, anyio.TypedAttributeLookupError):
        return None
    pid, uid, gid = _UCRED.unpack(data)
    return pid, uid, gid


def peer_allowed(stream: SocketStream, where: str) -> int | None:
    """The peer's pid if it runs as our uid; None (and a log line) otherwise."""
    creds = peer_credentials(stream)
    if creds is None:
        log.warning("%s: refusing a connection whose credentials cannot be read", where)
        return None
    pid, uid, _ = creds
    if uid != os.getuid():
        log.warning("%s: refused connection from pid %d of uid %d (daemon uid %d)", where, pid, uid, os.getuid())
        return None
    return pid
