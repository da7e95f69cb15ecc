"""`lensmux mcp` when a server crashes in a loop or hangs: bounded tool errors, never a hung session."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from support.daemon_proc import running_daemon
from support.fake_servers import fake_server_config, fake_workspace
from support.mcp_session import call, mcp_client

pytestmark = [pytest.mark.anyio]


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A workspace with one text file the fake server handles."""
    return fake_workspace(tmp_path / "ws")


async def test_crash_loop_and_open_breaker_are_tool_errors_then_it_recovers(tmp_path: Path, root: Path) -> None:
    marker = tmp_path / "crash-now"
    config = fake_server_config("--crash-while-exists", str(marker))
    with running_daemon(tmp_path / "d", config) as daemon:
        async with mcp_client(daemon, root) as client:
            text, _, is_error = await call(client, "document_symbols", file="a.txt")
            assert not is_error, text
            marker.touch()
            errors: list[str] = []
            for i in range(10):
                # A new query each time: a cached answer would not reach the server.
                text, _, is_error = await call(client, "workspace_symbols", query=f"q{i}")
                assert is_error and "no symbol matches" not in text, text
                errors.append(text)
                if "failing" in text:
                    break
            assert "fake is failing" in errors[-1] and "try again" in errors[-1], errors
            marker.unlink()

            async def recovered(n: int) -> bool:
                text, _, _ = await call(client, "workspace_symbols", query=f"after{n}")
                return not any(word in text for word in ("failing", "unavailable", "not ready"))

            with anyio.fail_after(60):
                n = 0
                while not await recovered(n):
                    n += 1
                    await anyio.sleep(0.5)


async def test_a_hung_request_ends_in_a_tool_error_within_its_timeout(tmp_path: Path, root: Path) -> None:
    config = fake_server_config("--hang-on", "textDocument/hover", extra="[servers.fake.timeouts]\ndefault = 2.0\n")
    with running_daemon(tmp_path / "d", config) as daemon:
        async with mcp_client(daemon, root) as client:
            text, _, is_error = await call(client, "hover", file="a.txt", line=1, column=1)
            assert is_error and "did not answer textDocument/hover within 2s" in text
            # The session goes on.
            text, _, is_error = await call(client, "document_symbols", file="a.txt")
            assert not is_error, text
