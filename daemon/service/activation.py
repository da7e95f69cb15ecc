"""Socket activation: adopt the listening sockets systemd passes, as sd_listen_fds(3) does.

systemd binds `%t/lensmux/<name>.sock` before lensmux starts and hands the
sockets over as fds 3, 4, ... with LISTEN_FDS, LISTEN_PID and LISTEN_FDNAMES.
Clients may connect before the daemon runs: their connections wait in the
listen backlog, which is the point of socket activation.

One socket unit gives all its fds the same name (lensmux.socket leaves
FileDescriptorName= at its default, the unit name), so fds are identified by
the path they are bound to: `.../clangd.sock` becomes `clangd`. Explicit
distinct names (separate socket units, or `systemd-socket-activate --fdname`)
take precedence when every fd has one.
"""

from __future__ import annotations

import logging
import os
import socket
from collections.abc import Mapping, MutableMapping
from pathlib import PurePosixPath

from anyio.abc import SocketListener

from lensmux.daemon.service.errors import (
    DuplicateSocketName,
    ListenPidMismatch,
    MalformedActivationEnv,
    NotAListener,
    UnidentifiedSocket,
)

logger = logging.getLogger(__name__)

SD_LISTEN_FDS_START = 3
SOCKET_SUFFIX = ".sock"
_ACTIVATION_ENV = ("LISTEN_FDS", "LISTEN_PID", "LISTEN_FDNAMES")
# Names systemd or its tools assign when nobody chose one; they say nothing
# about which server a socket belongs to.
_PLACEHOLDER_NAMES = frozenset({"", "unknown", "stored", "connection"})


def is_socket_activated(environ: Mapping[str, str] | None = None) -> bool:
    """True when LISTEN_FDS and LISTEN_PID are set (whether or not they are valid)."""
    env = os.environ if environ is None else environ
    return "LISTEN_FDS" in env and "LISTEN_PID" in env


def adopt_sockets(
    environ: MutableMapping[str, str] | None = None, *, unset_environment: bool = True
) -> dict[str, socket.socket]:
    """Take over the sockets systemd passed, keyed by server name; {} when not activated."""
    env = os.environ if environ is None else environ
    try:
        if not is_socket_activated(env):
            return {}
        count, names = _parse_environment(env)
    finally:
        # Children (the language servers) must never believe the fds are theirs.
        if unset_environment:
            for key in _ACTIVATION_ENV:
                env.pop(key, None)
    fds = range(SD_LISTEN_FDS_START, SD_LISTEN_FDS_START + count)
    sockets: list[socket.socket] = []
    try:
        for fd in fds:
            sockets.append(_adopt_fd(fd))
        return _identify(sockets, names)
    except BaseException:
        for sock in sockets:
            sock.close()
        raise


def _parse_environment(env: MutableMapping[str, str]) -> tuple[int, list[str] | None]:
    raw_pid = env["LISTEN_PID"]
    raw_fds = env["LISTEN_FDS"]
    try:
        pid = int(raw_pid)
        count = int(raw_fds)
    except ValueError:
        raise MalformedActivationEnv(f"LISTEN_PID={raw_pid!r} / LISTEN_FDS={raw_fds!r} are not integers") from None
    if pid != os.getpid():
        raise ListenPidMismatch(
            f"LISTEN_PID={pid} but this is pid {os.getpid()}: the sockets were passed to "
            "another process (a wrapper script must `exec` lensmux, not fork it)"
        )
    if count < 0:
        raise MalformedActivationEnv(f"LISTEN_FDS={count} is negative")
    raw_names = env.get("LISTEN_FDNAMES")
    if raw_names is None:
        return count, None
    names = raw_names.split(":")
    if len(names) != count:
        raise MalformedActivationEnv(f"LISTEN_FDNAMES has {len(names)} names for LISTEN_FDS={count} fds")
    return count, names


def _adopt_fd(fd: int) -> socket.socket:
    try:
        os.fstat(fd)
    except OSError as exc:
        raise MalformedActivationEnv(f"fd {fd} from LISTEN_FDS is not open: {exc}") from None
    # systemd passes the fds inheritable; a spawned language server must not keep them.
    os.set_inheritable(fd, False)
    try:
        return socket.socket(fileno=fd)
    except OSError as exc:
        raise NotAListener(f"fd {fd} from LISTEN_FDS is not a socket: {exc}") from None


def _identify(sockets: list[socket.socket], names: list[str] | None) -> dict[str, socket.socket]:
    keys = names if names is not None and _names_are_meaningful(names) else [_name_from_path(s) for s in sockets]
    adopted: dict[str, socket.socket] = {}
    for key, sock in zip(keys, sockets, strict=True):
        if key in adopted:
            raise DuplicateSocketName(f"two passed sockets are both named {key!r}")
        adopted[key] = sock
    logger.info("adopted %d socket(s) from systemd: %s", len(adopted), ", ".join(adopted))
    return adopted


def _names_are_meaningful(names: list[str]) -> bool:
    if len(set(names)) != len(names):
        return False
    # A name ending in .socket is systemd's default (the unit name), not a choice.
    return not any(n in _PLACEHOLDER_NAMES or n.endswith(".socket") for n in names)


def _name_from_path(sock: socket.socket) -> str:
    if sock.family != socket.AF_UNIX:
        raise UnidentifiedSocket(f"fd {sock.fileno()} is not a Unix socket and has no distinct LISTEN_FDNAMES name")
    address = sock.getsockname()
    if not isinstance(address, str) or not address:
        # Abstract or unbound sockets come back as bytes or "".
        raise UnidentifiedSocket(f"fd {sock.fileno()} is not bound to a filesystem path")
    name = PurePosixPath(address).name
    return name.removesuffix(SOCKET_SUFFIX) if name.endswith(SOCKET_SUFFIX) else name


async def listener_from_socket(sock: socket.socket) -> SocketListener:
    """Wrap an adopted listening stream socket as an anyio listener that owns it."""
    if sock.type != socket.SOCK_STREAM:
        raise NotAListener(f"fd {sock.fileno()} is {sock.type!r}, not SOCK_STREAM")
    try:
        listening = sock.getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN)
    except OSError as exc:
        raise NotAListener(f"fd {sock.fileno()}: {exc}") from None
    if not listening:
        raise NotAListener(f"fd {sock.fileno()} is not listening (Accept=yes is not supported)")
    # anyio's listener accepts with non-blocking calls; a blocking socket would
    # stall the event loop inside accept().
    sock.setblocking(False)
    return await SocketListener.from_socket(sock)
