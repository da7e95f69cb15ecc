"""A `lensmux serve --foreground` subprocess configured for measuring, not debugging.

Unlike the test harness's `running_daemon` (which logs at debug level so a
failing test explains itself), the benchmark daemon logs warnings only: a log
line per message would be part of what is measured.
"""

from __future__ import annotations

import signal
import subprocess
import sys
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

from support.daemon_proc import LENSMUX, DaemonProc, lensmux_env, wait_until

ECHO_SERVER = Path(__file__).resolve().parent.parent / "tests" / "fakes" / "echo_lsp_server.py"


class DaemonLaunchFailed(Exception):
    """The benchmark daemon did not come up."""


def config_text(*, cache: bool, echo: bool = False) -> str:
    """The benchmark configuration: embedded servers, cache on or off, optionally the echo server."""
    lines = ["[daemon]", 'log_level = "warning"', "", "[daemon.cache]", f"enabled = {'true' if cache else 'false'}"]
    if echo:
        lines += [
            "",
            "[servers.echo]",
            f"command = {_toml_string(sys.executable)}",
            f"args = [{_toml_string(str(ECHO_SERVER))}]",
            'root_markers = [".git"]',
        ]
    return "\n".join(lines) + "\n"


def _toml_string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


@contextmanager
def bench_daemon(
    base: Path,
    config: str,
    *,
    log_level: str = "warning",
    wrapper: Sequence[str] = (),
    extra_env: Mapping[str, str] | None = None,
    stop_timeout: float = 60,
) -> Iterator[DaemonProc]:
    """Run a daemon with private XDG dirs under `base`; `wrapper` prefixes the Python command (cProfile)."""
    base.mkdir(parents=True, exist_ok=True)
    env = lensmux_env(base, extra_env)
    runtime_dir = Path(env["XDG_RUNTIME_DIR"]) / "lensmux"
    config_path = base / "config.toml"
    config_path.write_text(config)
    log = base / "daemon.log"
    command = [*wrapper, LENSMUX] if wrapper else [LENSMUX]
    argv = [
        *command,
        "serve",
        "--foreground",
        "--runtime-dir",
        str(runtime_dir),
        "--config",
        str(config_path),
        "--log-level",
        log_level,
    ]
    with log.open("wb") as log_file:
        proc = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL, stdout=log_file, stderr=log_file)
    daemon = DaemonProc(proc, runtime_dir, env, log)
    try:

        def up() -> bool:
            if proc.poll() is not None:
                raise DaemonLaunchFailed(f"daemon exited early ({proc.returncode}):\n{daemon.log_text()[-4000:]}")
            try:
                daemon.call("lensmux/ping", timeout=2)
            except OSError:
                return False
            return True

        wait_until(up, timeout=60, what="benchmark daemon control socket")
        yield daemon
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(stop_timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def socket_path(daemon: DaemonProc, server: str) -> Path:
    """The Unix socket an editor would connect to for `server`."""
    return daemon.runtime_dir / f"{server}.sock"


def server_pids(daemon: DaemonProc, server: str) -> list[int]:
    """Pids of the live instances of one server."""
    return [int(i["pid"]) for i in daemon.instances(server) if i.get("pid")]
