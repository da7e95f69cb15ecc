"""The daemon serves the same on the stdlib asyncio loop and on uvloop, and says which it runs."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.daemon_proc import running_daemon
from support.fake_servers import fake_server_config, fake_workspace
from support.lspclient import concurrent_echoes, initialized_clients

from lensmux.daemon.main import UnknownEventLoop, event_loop_choice

pytestmark = [pytest.mark.anyio]


@pytest.mark.parametrize("loop", ["asyncio", "uvloop"])
async def test_two_clients_get_their_own_answers_on_either_loop(tmp_path: Path, loop: str) -> None:
    root = fake_workspace(tmp_path / "ws")
    with running_daemon(tmp_path / "d", fake_server_config(), extra_env={"LENSMUX_EVENT_LOOP": loop}) as daemon:
        async with initialized_clients(daemon.client_argv("fake"), root, "a", "b") as (a, b):
            results = await concurrent_echoes({"a": a, "b": b}, 50)
        assert all(results[f"{t}{i}"] == {"tag": t, "i": i} for t in "ab" for i in range(50))
        assert f"event loop: {loop}" in daemon.log_text()


def test_an_unknown_event_loop_name_is_refused_with_the_variable_named() -> None:
    with pytest.raises(UnknownEventLoop, match="LENSMUX_EVENT_LOOP"):
        event_loop_choice("auto", "trio")


def test_the_environment_overrides_the_configured_loop() -> None:
    assert event_loop_choice("uvloop", "asyncio") == "asyncio"
    assert event_loop_choice("auto", None) == "uvloop"  # installed with lensmux
