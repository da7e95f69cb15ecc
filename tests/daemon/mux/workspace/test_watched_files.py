"""The daemon's own file events: LSP glob patterns, watcher kinds, relative patterns."""

from __future__ import annotations

from typing import Any

import pytest
from daemon.mux.mux_stubs import WATCHER, StubInstance, stub

from lensmux.daemon.mux.workspace import registrations, watched_files

pytestmark = pytest.mark.anyio


def _reg(*watchers: dict[str, Any]) -> dict[str, Any]:
    return {"id": "w", "method": "workspace/didChangeWatchedFiles", "registerOptions": {"watchers": list(watchers)}}


@pytest.mark.parametrize(
    ("glob", "path", "hit"),
    [
        ("**/*.py", "/p/demo/a.py", True),
        ("**/*.py", "/p/demo/a.pyc", False),
        ("**/*.{c,h}", "/p/include/util.h", True),
        ("**/pyrightconfig.json", "/p/pyrightconfig.json", True),
        ("**", "/p/anything/at/all", True),
        ("*.py", "/p/demo/a.py", False),
        ("**/[!_]*.py", "/p/demo/_private.py", False),
    ],
)
def test_glob_patterns_match_like_the_lsp_says(glob: str, path: str, hit: bool) -> None:
    events = watched_files.matching_events([_reg({"globPattern": glob})], [(1, path)])
    assert bool(events) is hit


def test_kinds_and_relative_patterns_filter_events() -> None:
    created_only = {"globPattern": {"baseUri": "file:///p/src", "pattern": "*.c"}, "kind": 1}
    events = watched_files.matching_events(
        [_reg(created_only)], [(1, "/p/src/a.c"), (2, "/p/src/b.c"), (1, "/p/other/c.c"), (1, "/p/src/sub/d.c")]
    )
    assert events == [{"uri": "file:///p/src/a.c", "type": 1}]


async def test_the_daemon_sends_events_only_when_no_client_watches() -> None:
    watcher = stub(1, WATCHER)
    inst: Any = StubInstance(watcher)
    registrations.register(inst, {"registrations": [_reg({"globPattern": "**/*.py"})]})
    await watched_files.forward(inst, [(1, "/p/new.py")])
    assert inst.to_server == []  # the client holds the registration and sends its own
    del inst.clients[watcher.id]
    registrations.forget_client(inst, watcher.id)
    await watched_files.forward(inst, [(1, "/p/new.py"), (2, "/p/notes.txt")])
    assert inst.to_server == [
        {"method": "workspace/didChangeWatchedFiles", "params": {"changes": [{"uri": "file:///p/new.py", "type": 1}]}}
    ]
