"""A `lensmux serve --foreground` subprocess configured for measuring, not debugging.

Unlike the test harness's `running_daemon` (which logs at debug level so a
failing test explains itself), the benchmark daemon logs warnings only: a log
line per message would be part of what is measured. Its loopback HTTP API is
off, so several benchmark daemons (and anyone else's) can run side by side.
Every benchmark, multiplexer, index or search, starts its daemons here.
"""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from support.daemon_proc import LENSMUX, DaemonProc, lensmux_env, wait_until

ECHO_SERVER = Path(__file__).resolve().parent.parent / "tests" / "fakes" / "echo_lsp_server.py"


class BenchDaemonError(Exception):
    """Base of what can go wrong with a benchmark daemon."""


class DaemonLaunchFailed(BenchDaemonError):
    """The benchmark daemon did not come up."""


class IndexCommandFailed(BenchDaemonError):
    """`lensmux index --wait` failed or reported an error."""


def config_text(*, cache: bool = True, echo: bool = False, search: Mapping[str, Any] | None = None) -> str:
    """The benchmark configuration: embedded servers, cache on or off, HTTP API off.

    `echo` adds the echo server; `search` is a `[daemon.search]` table (nested tables allowed).
    """
    lines = ["[daemon]", 'log_level = "warning"', "", "[daemon.cache]", f"enabled = {'true' if cache else 'false'}"]
    lines += ["", "[daemon.http]", "enabled = false"]
    if search:
        lines += ["", "[daemon.search]"]
        lines += [f"{key} = {json.dumps(value)}" for key, value in search.items() if not isinstance(value, Mapping)]
        for key, value in search.items():
            if isinstance(value, Mapping):
                lines += ["", f"[daemon.search.{key}]", *(f"{k} = {json.dumps(v)}" for k, v in value.items())]
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


def copy_state(base: Path, work: Path) -> None:
    """A benchmark daemon's state under `base` (its roots' indexes, the per-user caches) copied to a fresh `work`.

    Another daemon started on `work` (bench_daemon) opens those indexes without indexing again.
    The roots' lock files stay behind: they were the first daemon's.
    """
    shutil.rmtree(work, ignore_errors=True)
    shutil.copytree(base / "s", work / "s", ignore=shutil.ignore_patterns("lock"))


def socket_path(daemon: DaemonProc, server: str) -> Path:
    """The Unix socket an editor would connect to for `server`."""
    return daemon.runtime_dir / f"{server}.sock"


def server_pids(daemon: DaemonProc, server: str) -> list[int]:
    """Pids of the live instances of one server."""
    return [int(i["pid"]) for i in daemon.instances(server) if i.get("pid")]


def index_with_cli(daemon: DaemonProc, root: Path, *, timeout: float) -> tuple[dict[str, Any], float]:
    """`lensmux index ROOT --wait --json` as a user runs it: its JSON summary and its wall time in seconds."""
    started = time.perf_counter()
    done = daemon.run_cli("index", str(root), "--wait", "--json", timeout=timeout)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise IndexCommandFailed(f"lensmux index {root} failed ({done.returncode}): {done.stderr[-2000:]}")
    summary: dict[str, Any] = json.loads(done.stdout)
    if summary.get("error"):
        raise IndexCommandFailed(f"indexing {root} ended with an error: {summary['error']}")
    return summary, wall
