"""What waits for pyright's discovery of its workspace, and until when (daemon/mux/lifecycle/discovery.py)."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from daemon.mux.mux_stubs import FakeClock

from lensmux.adapters.base import Adapter
from lensmux.adapters.registry import adapter_for
from lensmux.adapters.spec import ServerConfig
from lensmux.daemon.config import load_config
from lensmux.daemon.mux.lifecycle.discovery import DiscoveryGate
from lensmux.daemon.mux.lifecycle.warmup import Warmup
from lensmux.daemon.mux.requests.cache import ResponseCache

pytestmark = [pytest.mark.anyio]

EXTRA = "file:///work/extra"


def _pyright(tmp_path: Path) -> Adapter:
    return adapter_for(load_config(tmp_path / "none.toml").servers["pyright"])


def _found(adapter: Adapter, files: int = 12) -> None:
    message = f"Found {files} source files".encode()
    adapter.observe_notification("window/logMessage", b'{"type":3,"message":"' + message + b'"}')


def test_what_postpones_or_needs_discovery_waits_until_pyright_has_enumerated(tmp_path: Path) -> None:
    pyright = _pyright(tmp_path)
    gate = DiscoveryGate("pyright@test", pyright, clock=FakeClock())
    # Edits and symbol requests start pyright's 250 ms over again; references walk its file list.
    for method in ("textDocument/didChange", "textDocument/documentSymbol", "textDocument/references"):
        assert gate.holds(method)
    # Opening a document, hover, cancels: neither.
    for method in ("textDocument/didOpen", "textDocument/hover", "$/cancelRequest", "initialize"):
        assert not gate.holds(method)
    _found(pyright)
    gate.observe()
    assert not gate.holds("textDocument/didChange")
    assert not gate.holds("textDocument/references")


async def test_held_messages_go_on_when_pyright_says_it_has_discovered(tmp_path: Path) -> None:
    pyright = _pyright(tmp_path)
    gate = DiscoveryGate("pyright@test", pyright)
    released: list[str] = []

    async def send(method: str) -> None:
        await gate.wait(method)
        released.append(method)

    with anyio.fail_after(5):
        async with anyio.create_task_group() as group:
            group.start_soon(send, "textDocument/didChange")
            group.start_soon(send, "textDocument/references")
            await anyio.sleep(0.05)
            assert released == []
            # Any other log line is not the end of discovery.
            pyright.observe_notification("window/logMessage", b'{"type":3,"message":"Assuming Python version 3.11"}')
            gate.observe()
            await anyio.sleep(0.05)
            assert released == []
            _found(pyright)
            gate.observe()
    assert sorted(released) == ["textDocument/didChange", "textDocument/references"]


async def test_held_messages_go_on_in_the_order_they_came_across_clients_and_the_daemon(tmp_path: Path) -> None:
    # An editor's edit held during discovery, then an assistant's question (the daemon's own
    # request) about the same file: the edit must reach the server first, even when its
    # routing awaits (the document lock, the pipe) and the question's does not.
    pyright = _pyright(tmp_path)
    gate = DiscoveryGate("pyright@test", pyright)
    sent: list[str] = []

    async def route(name: str, method: str, awaits: int, own: bool = False) -> None:
        async with gate.in_order(method, own=own):
            for _ in range(awaits):
                await anyio.lowlevel.checkpoint()
            sent.append(name)

    async def gives_up(method: str) -> None:
        with anyio.move_on_after(0.02):
            async with gate.in_order(method):
                sent.append("never")

    with anyio.fail_after(5):
        async with anyio.create_task_group() as group:
            group.start_soon(route, "edit", "textDocument/didChange", 20)
            await anyio.sleep(0.01)
            group.start_soon(gives_up, "textDocument/didChange")  # its client went away while held
            await anyio.sleep(0.05)
            group.start_soon(route, "question", "textDocument/documentSymbol", 0, True)
            await anyio.sleep(0.01)
            assert sent == []
            _found(pyright)
            gate.observe()
            await anyio.lowlevel.checkpoint()
            # Arriving while the held ones are still going on: behind them, whatever its method,
            # for the daemon's own; a client's message of a method that never waits goes on.
            assert gate.queues("textDocument/hover", own=True)
            assert not gate.queues("textDocument/hover")
            group.start_soon(route, "later", "textDocument/hover", 0, True)
    assert sent == ["edit", "question", "later"]
    assert not gate.queues("textDocument/didChange", own=True)


def test_a_server_that_never_says_is_waited_for_no_longer_than_the_limit(tmp_path: Path) -> None:
    pyright = _pyright(tmp_path)
    clock = FakeClock()
    gate = DiscoveryGate("pyright@test", pyright, limit_s=10.0, clock=clock)
    assert gate.holds("textDocument/didChange")
    clock.now += 9.9
    assert gate.holds("textDocument/didChange")
    clock.now += 0.1
    assert not gate.holds("textDocument/didChange")
    # Until it starts discovering again (a folder added, a restart), nothing waits.
    clock.now += 100
    assert not gate.holds("textDocument/references")
    gate.begin()
    assert gate.holds("textDocument/references")


def test_servers_whose_discovery_nobody_postpones_hold_nothing(tmp_path: Path) -> None:
    generic = Adapter(ServerConfig(name="quiet", command="quiet-ls"))
    gate = DiscoveryGate("quiet@test", generic)
    assert not gate.holds("textDocument/didChange")
    clangd = adapter_for(load_config(tmp_path / "none.toml").servers["clangd"])
    assert not DiscoveryGate("clangd@test", clangd).holds("textDocument/references")


def test_pyright_with_quiet_logging_holds_nothing(tmp_path: Path) -> None:
    base = load_config(tmp_path / "none.toml").servers["pyright"]
    settings = {"python": {"analysis": {"logLevel": "Warning"}}}
    pyright = adapter_for(ServerConfig(name="pyright", command=base.command, adapter="pyright", settings=settings))
    # It never logs the end of its enumeration: there is nothing to wait for.
    assert not DiscoveryGate("pyright@test", pyright).holds("textDocument/didChange")


def test_each_added_folder_is_discovered_on_its_own(tmp_path: Path) -> None:
    pyright = _pyright(tmp_path)
    warmup = Warmup("pyright@test", pyright, ResponseCache(1 << 20), quiet_s=3.0, clock=FakeClock())
    warmup.restart()
    # A folder added before the root is enumerated: pyright logs the end of each, in that order.
    warmup.folders_changed([EXTRA], [])
    _found(pyright, 45)
    assert warmup.discovery.holds("workspace/symbol")
    assert warmup.busy()
    _found(pyright, 1)
    warmup.discovery.observe()
    assert not warmup.discovery.holds("workspace/symbol")
    assert not warmup.busy()
    # Added later, it holds again; removed before pyright enumerated it, it is not waited for.
    warmup.folders_changed([EXTRA], [])
    assert warmup.discovery.holds("workspace/symbol")
    warmup.folders_changed([], [EXTRA])
    assert not warmup.discovery.holds("workspace/symbol")
