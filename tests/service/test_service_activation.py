"""Socket activation through Debian's real systemd-socket-activate launcher."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from lensmux.daemon.service.activation import adopt_sockets, listener_from_socket
from lensmux.daemon.service.errors import (
    ListenPidMismatch,
    MalformedActivationEnv,
    NotAListener,
)

ACTIVATE = shutil.which("systemd-socket-activate")
needs_activate = pytest.mark.skipif(
    ACTIVATE is None, reason="systemd-socket-activate is not installed (Debian package systemd)"
)

# Waits for "go" so the test can prove connections made before start-up are kept,
# then answers one request per socket with "<name>:<request>".
SERVER_PROGRAM = """
import json, os, sys
import anyio
from lensmux.daemon.service.activation import adopt_sockets, listener_from_socket

sys.stdin.readline()
sockets = adopt_sockets()
print(json.dumps({
    "names": sorted(sockets),
    "env_left": [k for k in ("LISTEN_FDS", "LISTEN_PID", "LISTEN_FDNAMES") if k in os.environ],
    "inheritable": [os.get_inheritable(s.fileno()) for s in sockets.values()],
}), flush=True)

async def answer_one(name, listener):
    async with listener:
        stream = await listener.accept()
        async with stream:
            request = await stream.receive()
            await stream.send(name.encode() + b":" + request)

async def main():
    async with anyio.create_task_group() as tg:
        for name, sock in sockets.items():
            tg.start_soon(answer_one, name, await listener_from_socket(sock))

anyio.run(main)
"""


@pytest.fixture
def sock_dir() -> Iterator[Path]:
    """A short directory: sun_path holds only 108 bytes, pytest's tmp_path can be longer."""
    path = Path(tempfile.mkdtemp(prefix="lmx-", dir="/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def _launch(paths: list[Path], extra: list[str]) -> subprocess.Popen[str]:
    assert ACTIVATE is not None
    argv = [ACTIVATE, *(f"--listen={p}" for p in paths), *extra]
    argv += [sys.executable, "-c", SERVER_PROGRAM]
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    # The launcher reports each bound socket before it waits for the first client.
    bound = 0
    while bound < len(paths):
        line = proc.stderr.readline()
        assert line, f"launcher exited early (rc={proc.wait()})"
        bound += line.startswith("Listening on ")
    return proc


def _exchange(
    paths: list[Path], extra: list[str], requests: dict[Path, bytes]
) -> tuple[dict[str, object], dict[Path, bytes]]:
    proc = _launch(paths, extra)
    clients: dict[Path, socket.socket] = {}
    try:
        for path in paths:
            client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            client.settimeout(60)
            client.connect(str(path))
            client.sendall(requests[path])
            clients[path] = client
        # Every client is connected and has sent its request; only now does the
        # program start adopting the sockets.
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write("go\n")
        proc.stdin.flush()
        facts = json.loads(proc.stdout.readline())
        answers = {path: client.recv(4096) for path, client in clients.items()}
        assert proc.wait(timeout=60) == 0
        return facts, answers
    finally:
        for client in clients.values():
            client.close()
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for stream in (proc.stdin, proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()


@needs_activate
def test_clients_connecting_before_start_are_answered_on_sockets_named_by_path(
    sock_dir: Path,
) -> None:
    paths = [sock_dir / "clangd.sock", sock_dir / "pyright.sock", sock_dir / "lensmux.sock"]
    requests = {p: f"hello {p.stem}".encode() for p in paths}

    facts, answers = _exchange(paths, [], requests)

    assert facts == {
        "names": ["clangd", "lensmux", "pyright"],
        "env_left": [],
        "inheritable": [False, False, False],
    }
    assert answers == {p: f"{p.stem}:hello {p.stem}".encode() for p in paths}


@needs_activate
def test_distinct_fd_names_take_precedence_over_paths(sock_dir: Path) -> None:
    paths = [sock_dir / "a.sock", sock_dir / "b.sock"]
    requests = {p: b"ping" for p in paths}

    facts, answers = _exchange(paths, ["--fdname=clangd:lensmux"], requests)

    assert facts["names"] == ["clangd", "lensmux"]
    assert answers == {paths[0]: b"clangd:ping", paths[1]: b"lensmux:ping"}


@needs_activate
def test_repeated_default_fd_names_fall_back_to_paths(sock_dir: Path) -> None:
    paths = [sock_dir / "omnisharp.sock", sock_dir / "lensmux.sock"]
    requests = {p: b"x" for p in paths}

    facts, answers = _exchange(paths, ["--fdname=lensmux.socket:lensmux.socket"], requests)

    assert facts["names"] == ["lensmux", "omnisharp"]
    assert answers[paths[0]] == b"omnisharp:x"


def test_not_activated_yields_nothing() -> None:
    assert adopt_sockets({}) == {}


def test_sockets_meant_for_another_process_are_refused_and_env_cleared() -> None:
    env = {"LISTEN_FDS": "2", "LISTEN_PID": str(os.getpid() + 1), "LISTEN_FDNAMES": "a:b"}
    with pytest.raises(ListenPidMismatch):
        adopt_sockets(env)
    assert env == {}


@pytest.mark.parametrize(
    "env",
    [
        {"LISTEN_FDS": "two"},
        {"LISTEN_FDS": "-1"},
        {"LISTEN_FDS": "2", "LISTEN_FDNAMES": "only-one"},
    ],
)
def test_malformed_activation_environment_is_refused(env: dict[str, str]) -> None:
    env["LISTEN_PID"] = str(os.getpid())
    with pytest.raises(MalformedActivationEnv):
        adopt_sockets(env)


@pytest.mark.anyio
@pytest.mark.timeout(30)
async def test_listener_from_blocking_socket_does_not_block_the_loop(sock_dir: Path) -> None:
    raw = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    raw.bind(str(sock_dir / "ctl.sock"))
    raw.listen()
    assert raw.getblocking()  # systemd hands sockets over in blocking mode
    listener = await listener_from_socket(raw)
    received: list[bytes] = []

    async def serve_one() -> None:
        async with listener:
            stream = await listener.accept()
            async with stream:
                received.append(await stream.receive())

    with anyio.fail_after(20):
        async with anyio.create_task_group() as tg:
            tg.start_soon(serve_one)
            # Same event loop: a blocking accept() would never let this run.
            async with await anyio.connect_unix(sock_dir / "ctl.sock") as client:
                await client.send(b"hi")
    assert received == [b"hi"]


@pytest.mark.anyio
async def test_non_listening_sockets_are_refused(sock_dir: Path) -> None:
    bound = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    bound.bind(str(sock_dir / "idle.sock"))
    datagram = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    datagram.bind(str(sock_dir / "dgram.sock"))
    for sock in (bound, datagram):
        with sock, pytest.raises(NotAListener):
            await listener_from_socket(sock)
