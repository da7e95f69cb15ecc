"""Spawning and stopping server processes so that none outlives the daemon.

Only the instance supervisor calls this module; nothing else spawns or kills.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

import anyio
from anyio.abc import Process

log = logging.getLogger(__name__)

# The child asks the kernel for SIGKILL when the daemon dies (even by kill -9),
# then becomes the server. anyio has no preexec hook, so a tiny exec shim does
# it; the check of the parent pid closes the race with a parent already gone.
_PDEATHSIG_SHIM = (
    "import ctypes,os,sys\n"
    "ctypes.CDLL(None, use_errno=True).prctl(1, 9, 0, 0, 0)\n"
    "if os.getppid() != int(sys.argv[1]): os._exit(1)\n"
    "os.execvpe(sys.argv[2], sys.argv[2:], os.environ)\n"
)


class SpawnFailed(Exception):
    """The server process could not be started."""


async def spawn(argv: Sequence[str], *, env: Mapping[str, str], cwd: Path) -> tuple[Process, int]:
    """Start a server with stdio pipes, in its own process group, tied to our life.

    Returns the process and the read end of its stdout, a pipe of the caller's
    own (process.stdout is None): the caller reads it under an asyncio protocol.
    """
    shim = [sys.executable, "-c", _PDEATHSIG_SHIM, str(os.getpid()), *argv]
    # Not inheritable (PEP 446): no other child of the daemon keeps the server's output open.
    read_end, write_end = os.pipe()
    try:
        process = await anyio.open_process(
            shim,
            stdin=subprocess.PIPE,
            stdout=write_end,
            stderr=subprocess.PIPE,
            cwd=str(cwd),
            env=dict(env),
            start_new_session=True,
        )
    except BaseException as exc:
        os.close(read_end)
        if isinstance(exc, OSError):
            raise SpawnFailed(f"cannot start {argv[0]}: {exc}") from exc
        raise
    finally:
        # The child has its own copy; ours would keep the pipe open after the server exits.
        os.close(write_end)
    return process, read_end


def _signal_group(process: Process, sig: signal.Signals) -> None:
    try:
        os.killpg(process.pid, sig)
    except ProcessLookupError:
        pass
    except PermissionError:
        # The group may be gone and its id reused; fall back to the process.
        try:
            process.send_signal(sig)
        except ProcessLookupError:
            pass


async def terminate(process: Process, grace: float) -> int | None:
    """SIGTERM the server's group, then SIGKILL after `grace`; return the exit code."""
    if process.returncode is None:
        _signal_group(process, signal.SIGTERM)
        with anyio.move_on_after(grace):
            await process.wait()
    if process.returncode is None:
        log.warning("pid %d ignored SIGTERM for %.1fs; killing it", process.pid, grace)
        _signal_group(process, signal.SIGKILL)
        with anyio.CancelScope(shield=True):
            await process.wait()
    else:
        # The server is gone but helpers it started may not be.
        _signal_group(process, signal.SIGKILL)
    return process.returncode


async def wait_exit(process: Process, timeout: float) -> bool:
    """Wait up to `timeout` for the process to exit on its own."""
    with anyio.move_on_after(timeout):
        await process.wait()
    return process.returncode is not None
