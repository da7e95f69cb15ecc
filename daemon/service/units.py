"""Render lensmux's systemd user units and install or remove them.

The unit texts live here, not in files beside the package, so an installed
wheel can always render them. `systemd/lensmux.socket` and
`systemd/lensmux.service` in the repository are these templates rendered for
the default servers with the `@LENSMUX@` placeholder, for packagers;
tests keep the two in step.

Where no user manager runs (ssh without lingering, containers, root shells),
install still writes the files and reports the commands to run later.
"""

from __future__ import annotations

import logging
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from lensmux.daemon.service.errors import ExecutableNotFound, SystemctlFailed, UnitRenderError

logger = logging.getLogger(__name__)

SOCKET_UNIT = "lensmux.socket"
SERVICE_UNIT = "lensmux.service"
CONTROL_SOCKET = "lensmux"
DEFAULT_SERVERS = ("clangd", "pyright", "omnisharp")
EXECUTABLE_PLACEHOLDER = "@LENSMUX@"
SYSTEMCTL_TIMEOUT = 60.0
# States `systemctl --user is-system-running` prints when a user manager
# answered; it exits non-zero for "degraded" too, so the exit code alone misleads.
_MANAGER_STATES = frozenset({"initializing", "starting", "running", "degraded", "maintenance", "stopping"})
# Server names become `%t/lensmux/<name>.sock`: no specifiers, no separators.
_SERVER_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.+-]{0,63}")

_SOCKET_TEMPLATE = """\
# lensmux user sockets: lensmux starts on the first connection to any of them.
# FileDescriptorName= stays at its default: one socket unit gives all its fds
# the same name, so lensmux tells them apart by the path each is bound to.
[Unit]
Description=lensmux language-server multiplexer sockets

[Socket]
{listen_lines}
SocketMode=0600
DirectoryMode=0700
RemoveOnStop=yes

[Install]
WantedBy=sockets.target
"""

_SERVICE_TEMPLATE = """\
# lensmux user service, started by lensmux.socket.
[Unit]
Description=lensmux language-server multiplexer
Requires=lensmux.socket
After=lensmux.socket

[Service]
Type=notify
NotifyAccess=main
ExecStart={exec_start} serve --foreground
ExecReload=/bin/kill -HUP $MAINPID
WatchdogSec=30s
Restart=on-failure
RestartSec=2s
TimeoutStopSec=20s
# Every language server is in the service's cgroup: none outlives a stop.
KillMode=control-group
UMask=0077
# Hardening limited to what an unprivileged user manager can enforce (seccomp
# and no_new_privs). Namespace options (PrivateTmp=, ProtectSystem=,
# ProtectHome=, ...) need PrivateUsers= in user units and are left out.
# MemoryDenyWriteExecute= stays off: onnxruntime and node's JIT map W+X pages.
NoNewPrivileges=yes
RestrictRealtime=yes
RestrictSUIDSGID=yes
LockPersonality=yes
SystemCallArchitectures=native

[Install]
Also=lensmux.socket
"""


def socket_names(server_names: Sequence[str]) -> tuple[str, ...]:
    """The socket names for the configured servers, control socket last; validates names."""
    seen: set[str] = set()
    for name in server_names:
        if not _SERVER_NAME.fullmatch(name):
            raise UnitRenderError(
                f"server name {name!r} cannot name a socket: use letters, digits, "
                "'_', '.', '+', '-' (at most 64, starting with a letter or digit)"
            )
        if name == CONTROL_SOCKET:
            raise UnitRenderError(f"server name {name!r} is reserved for the control socket")
        if name in seen:
            raise UnitRenderError(f"server name {name!r} is configured twice")
        seen.add(name)
    return (*server_names, CONTROL_SOCKET)


def render_socket_unit(server_names: Sequence[str]) -> str:
    """lensmux.socket with one ListenStream= per server plus the control socket."""
    lines = "\n".join(f"ListenStream=%t/lensmux/{n}.sock" for n in socket_names(server_names))
    return _SOCKET_TEMPLATE.format(listen_lines=lines)


def render_service_unit(executable: Path | str) -> str:
    """lensmux.service starting executable (absolute, or the @LENSMUX@ placeholder)."""
    text = str(executable)
    if text != EXECUTABLE_PLACEHOLDER and not os.path.isabs(text):
        raise UnitRenderError(f"ExecStart needs an absolute path, got {text!r}")
    return _SERVICE_TEMPLATE.format(exec_start=_exec_quote(text))


def render_units(server_names: Sequence[str], executable: Path | str) -> dict[str, str]:
    """Both unit files, keyed by file name."""
    return {
        SOCKET_UNIT: render_socket_unit(server_names),
        SERVICE_UNIT: render_service_unit(executable),
    }


def _exec_quote(path: str) -> str:
    if any(c in path for c in "\n\r\0$"):
        # systemd takes the executable path literally but expands `$` in argv[0],
        # so no escaping gives both the same meaning.
        raise UnitRenderError(f"executable path {path!r} contains $, a line break or NUL")
    # `%` starts a specifier in Exec lines, in the path too.
    escaped = path.replace("%", "%%")
    if re.search(r"[\s\"'\\;]", escaped):
        escaped = '"' + escaped.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return escaped


def resolve_executable() -> Path:
    """Absolute path of the installed `lensmux` entry point, preferring this interpreter's."""
    # Not resolved: a venv's python is a symlink to the base interpreter,
    # whose directory has no lensmux.
    beside_python = Path(sys.executable).parent / "lensmux"
    candidates: list[Path] = [beside_python]
    found = shutil.which("lensmux")
    if found:
        candidates.append(Path(found))
    if Path(sys.argv[0]).name == "lensmux":
        candidates.append(Path(sys.argv[0]))
    for candidate in candidates:
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return Path(os.path.abspath(candidate))
    raise ExecutableNotFound(
        f"cannot find the lensmux executable (looked beside {sys.executable}, on PATH and at {sys.argv[0]!r})"
    )


def user_unit_dir(environ: Mapping[str, str] | None = None) -> Path:
    """$XDG_CONFIG_HOME/systemd/user, or ~/.config/systemd/user."""
    env = os.environ if environ is None else environ
    config = env.get("XDG_CONFIG_HOME", "")
    # The XDG spec says a relative value is invalid and must be ignored.
    base = Path(config) if os.path.isabs(config) else Path.home() / ".config"
    return base / "systemd" / "user"


def user_manager_running() -> bool:
    """True when `systemctl --user` reaches a running user manager."""
    command = ["systemctl", "--user", "is-system-running"]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=SYSTEMCTL_TIMEOUT, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        logger.info("no user manager: %s failed: %s", shlex.join(command), exc)
        return False
    state = done.stdout.strip()
    if state in _MANAGER_STATES:
        return True
    logger.info("no user manager: %s said %r %s", shlex.join(command), state, done.stderr.strip())
    return False


@dataclass(frozen=True, slots=True)
class InstallReport:
    """What install_service / uninstall_service did and what the user still has to do."""

    unit_dir: Path
    files_written: tuple[Path, ...]
    files_removed: tuple[Path, ...]
    user_manager_running: bool
    commands_run: tuple[str, ...]
    commands_to_run: tuple[str, ...]
    message: str


def _systemctl_argv(*args: str) -> list[str]:
    return ["systemctl", "--user", *args]


def _run_systemctl(argv: list[str]) -> str:
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=SYSTEMCTL_TIMEOUT, check=False)
    except subprocess.TimeoutExpired:
        raise SystemctlFailed(argv, -1, f"no answer within {SYSTEMCTL_TIMEOUT:.0f}s") from None
    except OSError as exc:
        raise SystemctlFailed(argv, -1, str(exc)) from None
    if done.returncode != 0:
        raise SystemctlFailed(argv, done.returncode, done.stderr)
    logger.info("ran %s", shlex.join(argv))
    return shlex.join(argv)


def _write_atomically(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
            out.flush()
            os.fchmod(out.fileno(), 0o644)
            os.fsync(out.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    _fsync_dir(path.parent)


def _fsync_dir(directory: Path) -> None:
    dir_fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def install_service(
    server_names: Sequence[str],
    now: bool,
    unit_dir: Path | None = None,
    *,
    executable: Path | None = None,
) -> InstallReport:
    """Write lensmux.socket/.service, reload the user manager and, with now, enable the socket."""
    target = user_unit_dir() if unit_dir is None else unit_dir
    units = render_units(server_names, resolve_executable() if executable is None else executable)
    target.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    for file_name, text in units.items():
        path = target / file_name
        _write_atomically(path, text)
        written.append(path)
    reload = _systemctl_argv("daemon-reload")
    enable = _systemctl_argv("enable", "--now", SOCKET_UNIT)
    wanted = [reload, enable] if now else [reload]
    where = f"{SOCKET_UNIT} and {SERVICE_UNIT} written to {target}"
    if not user_manager_running():
        pending = tuple(shlex.join(argv) for argv in (reload, enable))
        return InstallReport(
            unit_dir=target,
            files_written=tuple(written),
            files_removed=(),
            user_manager_running=False,
            commands_run=(),
            commands_to_run=pending,
            message=(
                f"{where}. systemd is not running for this user (`systemctl --user` cannot "
                "reach a user manager), so nothing was enabled. Once a user manager runs "
                "(log in to a systemd session, or `loginctl enable-linger` for a server), run:\n"
                + "\n".join(f"  {c}" for c in pending)
            ),
        )
    ran = tuple(_run_systemctl(argv) for argv in wanted)
    if now:
        socket_dir = "$XDG_RUNTIME_DIR/lensmux"
        message = f"{where}; {SOCKET_UNIT} is enabled and listening in {socket_dir}."
        pending = ()
    else:
        pending = (shlex.join(enable),)
        message = f"{where}; to start lensmux on demand at every login, run:\n  {pending[0]}"
    return InstallReport(
        unit_dir=target,
        files_written=tuple(written),
        files_removed=(),
        user_manager_running=True,
        commands_run=ran,
        commands_to_run=pending,
        message=message,
    )


def uninstall_service(unit_dir: Path | None = None) -> InstallReport:
    """Stop and disable the units, delete their files and reload the user manager."""
    target = user_unit_dir() if unit_dir is None else unit_dir
    paths = [target / SOCKET_UNIT, target / SERVICE_UNIT]
    running = user_manager_running()
    disable = _systemctl_argv("disable", "--now", SOCKET_UNIT, SERVICE_UNIT)
    reload = _systemctl_argv("daemon-reload")
    ran: list[str] = []
    # Disabling unknown units fails, so only disable what is still installed.
    if running and any(p.exists() for p in paths):
        ran.append(_run_systemctl(disable))
    removed: list[Path] = []
    for path in paths:
        if path.exists():
            path.unlink()
            removed.append(path)
    # Without a manager `disable` cannot run; the enablement symlink is ours to remove.
    wants_link = target / "sockets.target.wants" / SOCKET_UNIT
    if wants_link.is_symlink():
        wants_link.unlink()
        removed.append(wants_link)
    if removed:
        _fsync_dir(target)
    if running:
        ran.append(_run_systemctl(reload))
        pending: tuple[str, ...] = ()
        message = f"lensmux units stopped, disabled and removed from {target}."
    else:
        stop = _systemctl_argv("stop", SOCKET_UNIT, SERVICE_UNIT)
        pending = (shlex.join(stop), shlex.join(reload))
        message = (
            f"lensmux unit files removed from {target}. systemd is not running for this "
            "user, so nothing was stopped; if a user manager does run lensmux (e.g. this "
            "shell lacks XDG_RUNTIME_DIR), run:\n" + "\n".join(f"  {c}" for c in pending)
        )
    return InstallReport(
        unit_dir=target,
        files_written=(),
        files_removed=tuple(removed),
        user_manager_running=running,
        commands_run=tuple(ran),
        commands_to_run=pending,
        message=message,
    )
