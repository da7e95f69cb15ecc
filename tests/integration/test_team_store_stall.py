"""A team store that stalls never holds up an editor (issue 24, "never blocks an editor on it").

Daemon B overlays the team's snapshot through a fault-injection proxy in front of the real
PostgreSQL (tests/support/stalling_proxy.py). The proxy then stops delivering anything, as a
partitioned or SIGSTOPped server would: the connections stay open and no answer comes. A
search asks the store and waits; while its question is still held at the proxy, an editor on
the same daemon (the real pyright) gets its documentSymbol, hover and definition answers and
the diagnostics of a file it opens, and the daemon its index status. The search then gives up on the store by itself and
answers from the local side, saying the team index was lost, instead of hanging.
"""

from __future__ import annotations

import json
import subprocess
import threading
from pathlib import Path
from typing import Any

import anyio
import pytest
from support.daemon_proc import DaemonProc, running_daemon, wait_until
from support.lspclient import LspClient
from support.postgres_server import PostgresServer
from support.projects import git
from support.stalling_proxy import StallingProxy

pytestmark = [pytest.mark.slow]


def _config(dsn: str) -> str:
    return f'[index]\nstore = "postgres"\ndsn = "{dsn}"\n\n[daemon.embedding]\nquery_adapter = false\n'


def _search(daemon: DaemonProc, root: Path, query: str, timeout: float = 300) -> dict[str, Any]:
    result: dict[str, Any] = daemon.call("lensmux/hybridSearch", {"query": query, "root": str(root)}, timeout=timeout)
    return result


def _position(text: str, line_prefix: str, name: str) -> dict[str, int]:
    for number, line in enumerate(text.split("\n")):
        if line.startswith(line_prefix):
            return {"line": number, "character": line.index(name)}
    raise AssertionError(f"no line starting {line_prefix!r}")


async def _editor_while_stalled(daemon: DaemonProc, clone: Path, proxy: StallingProxy) -> dict[str, Any]:
    """Stall the store under a search, then ask pyright through the daemon; what came back, and when."""
    main, util = clone / "demo" / "main.py", clone / "demo" / "util.py"
    text = main.read_text()
    seen: dict[str, Any] = {}
    async with LspClient.over_unix(daemon.runtime_dir / "pyright.sock", name="editor") as editor:
        await editor.initialize(clone)
        uri = await editor.open(main, "python", text)
        doc = {"textDocument": {"uri": uri}}
        assert await editor.request("textDocument/documentSymbol", doc, timeout=120)  # pyright is up

        proxy.stall()
        searched: dict[str, Any] = {}
        finished = threading.Event()

        def search() -> None:
            try:
                searched["response"] = _search(daemon, clone, "multiply a value by repeated addition", timeout=120)
            except (OSError, RuntimeError) as exc:
                searched["error"] = exc
            finally:
                finished.set()

        async with anyio.create_task_group() as tg:
            tg.start_soon(anyio.to_thread.run_sync, search)
            # The search's question to the store is held: the daemon now waits on a stalled store.
            await anyio.to_thread.run_sync(
                lambda: wait_until(lambda: proxy.holding_open() > 0, timeout=60, what="a store call held at the proxy")
            )
            since = len(editor.notifications)
            seen["symbols"] = await editor.request("textDocument/documentSymbol", doc, timeout=60)
            at = _position(text, "        return scale", "scale")
            seen["hover"] = await editor.request("textDocument/hover", {**doc, "position": at}, timeout=60)
            seen["definition"] = await editor.request("textDocument/definition", {**doc, "position": at}, timeout=60)
            seen["status"] = await anyio.to_thread.run_sync(
                lambda: daemon.call("lensmux/indexStatus", {"root": str(clone)}, timeout=60)
            )
            util_uri = await editor.open(util, "python")
            seen["diagnostics"] = await editor.wait_notification(
                "textDocument/publishDiagnostics", lambda p: p["uri"] == util_uri, timeout=60, since=since
            )
            # All of it while the store's traffic is still held and the search still waits on it.
            seen["held_connections"] = proxy.holding_open()
            seen["search_pending"] = not finished.is_set()
            await anyio.to_thread.run_sync(finished.wait)
        seen.update(searched)
        proxy.resume()
        await editor.shutdown_and_exit(timeout=60)
    return seen


def test_an_editor_is_answered_while_the_team_store_stalls(
    py_project: Path, tmp_path: Path, team_database: str, postgres_server: PostgresServer
) -> None:
    git(py_project, "init", "-q")
    git(py_project, "add", "-A")
    git(py_project, "commit", "-q", "-m", "first")
    with running_daemon(tmp_path / "a", _config(team_database)) as publisher:
        done = publisher.run_cli("index", str(py_project), "--publish", "--json", timeout=600)
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout.strip().splitlines()[-1])["files"] >= 3

    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(py_project), str(clone)], check=True)
    proxy_dir = tmp_path / "proxy"
    proxy_dir.mkdir()
    proxy = StallingProxy(Path(postgres_server.socket_dir) / ".s.PGSQL.5432", proxy_dir)
    with proxy.running(), running_daemon(tmp_path / "b", _config(proxy.dsn(team_database))) as consumer:
        assert consumer.run_cli("index", str(clone), "--wait", timeout=600).returncode == 0
        assert _search(consumer, clone, "scale a value")["shared"] is not None

        seen = anyio.run(_editor_while_stalled, consumer, clone, proxy)

        assert seen["held_connections"] > 0 and seen["search_pending"], seen
        assert "Calculator" in json.dumps(seen["symbols"]) and "compute" in json.dumps(seen["symbols"])
        assert "scale" in json.dumps(seen["hover"])
        assert "util.py" in json.dumps(seen["definition"])
        assert seen["diagnostics"]["diagnostics"] == []
        assert seen["status"]["shared"] is not None  # the daemon's own status answers too, without the store
        assert "error" not in seen, seen.get("error")
        response = seen["response"]
        assert response["shared"] is None
        assert any("team index lost" in w for w in response["warnings"]), response["warnings"]
        # The daemon is still whole once the store answers again.
        assert consumer.call("lensmux/ping") is not None
