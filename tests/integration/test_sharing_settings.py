"""A client's settings push does not reconfigure the server for everyone (issue 12, point 9).

clangd takes compile flags from `workspace/didChangeConfiguration`
(`compilationDatabaseChanges`). If the daemon forwarded one editor's push, every
other editor's view of the same file would change; docs/sharing.md says the
server configuration's settings apply, whoever connects or pushes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from support.daemon_proc import DaemonProc
from support.lspclient import LspClient

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

FLAGGED = '#ifdef LENSMUX_CLIENT_FLAG\nint broken = "not an int";\n#endif\nint ok(void) { return 0; }\n'


async def _diagnostics_of_version(client: LspClient, uri: str, version: int) -> list[Any]:
    def current(params: dict[str, Any]) -> bool:
        return bool(params["uri"] == uri and params.get("version") == version)

    published = await client.wait_notification("textDocument/publishDiagnostics", current, timeout=60)
    diagnostics: list[Any] = published["diagnostics"]
    return diagnostics


async def test_one_clients_pushed_settings_do_not_change_another_clients_view(
    daemon: DaemonProc, c_project: Path
) -> None:
    source = c_project / "src/flagged.c"
    source.write_text(FLAGGED)
    argv = daemon.client_argv("clangd")
    async with (
        LspClient.over_process(argv, name="pusher") as pusher,
        LspClient.over_process(argv, name="other") as other,
    ):
        await pusher.initialize(c_project)
        await other.initialize(c_project)
        uri = await other.open(source, "c")
        assert await _diagnostics_of_version(other, uri, 1) == []
        command = ["clang", "-DLENSMUX_CLIENT_FLAG", "-c", str(source)]
        changes = {str(source): {"workingDirectory": str(c_project), "compilationCommand": command}}
        await pusher.notify("workspace/didChangeConfiguration", {"settings": {"compilationDatabaseChanges": changes}})
        # Edits make clangd publish again, each for a version only this client knows;
        # the pauses give a pushed flag time to take effect (forwarded, it would by the last).
        for version in range(2, 7):
            await anyio.sleep(0.5)
            await other.change_full(uri, FLAGGED + "\n" * version, version)
            assert await _diagnostics_of_version(other, uri, version) == [], f"version {version}"
