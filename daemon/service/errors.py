"""Errors of the systemd integration, one base for the whole area.

Everything here is raised at start-up or by `lensmux service install/uninstall`,
never while serving clients: a notify datagram that cannot be delivered is
logged, not raised, because losing a status line must not take the daemon down.

    ServiceError
     ├── ActivationError          (LISTEN_* environment or passed fds unusable)
     │    ├── ListenPidMismatch   (fds were meant for another process)
     │    ├── MalformedActivationEnv
     │    ├── UnidentifiedSocket  (neither a usable fd name nor a socket path)
     │    ├── DuplicateSocketName
     │    └── NotAListener        (a passed fd is not a listening stream socket)
     ├── UnitRenderError          (bad server name, unusable executable path)
     │    └── ExecutableNotFound
     ├── SystemctlFailed          (systemd runs, but a systemctl call failed)
     └── InvalidLogLevel
"""

from __future__ import annotations

from collections.abc import Sequence


class ServiceError(Exception):
    """Base of everything lensmux.daemon.service raises."""


class ActivationError(ServiceError):
    """The socket-activation hand-over from systemd cannot be used."""


class ListenPidMismatch(ActivationError):
    """LISTEN_PID names another process, typically a wrapper that forked instead of exec'ing."""


class MalformedActivationEnv(ActivationError):
    """LISTEN_FDS / LISTEN_FDNAMES are not what sd_listen_fds(3) specifies."""


class UnidentifiedSocket(ActivationError):
    """A passed fd has neither a meaningful name nor a bound socket path."""


class DuplicateSocketName(ActivationError):
    """Two passed fds resolve to the same socket name."""


class NotAListener(ActivationError):
    """A passed fd is not a listening SOCK_STREAM socket."""


class UnitRenderError(ServiceError):
    """The unit files cannot be rendered from the given inputs."""


class ExecutableNotFound(UnitRenderError):
    """No absolute path to the `lensmux` executable could be determined."""


class SystemctlFailed(ServiceError):
    """`systemctl --user` reached the user manager but the command failed."""

    def __init__(self, command: Sequence[str], returncode: int, stderr: str) -> None:
        self.command = tuple(command)
        self.returncode = returncode
        self.stderr = stderr
        super().__init__(f"{' '.join(command)} exited with {returncode}: {stderr.strip()}")


class InvalidLogLevel(ServiceError, ValueError):
    """The log level is not one of debug, info, warning, error, critical."""
