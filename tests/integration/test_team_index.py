"""The team store through real daemons (issue 24): publish a commit, consume it from a clone with local changes.

Daemon A publishes its checkout with `lensmux index ROOT --publish` into a real PostgreSQL
(tests/support/postgres_server.py); daemon B, on a clone of the same history with an
uncommitted change, indexes only that file locally and answers searches from the shared
snapshot with its change laid over it, naming the shared commit. Daemon C's team store
cannot be reached: it searches its local index, saying so in `warnings`.
"""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import tempfile
import urllib.request
from pathlib import Path
from typing import Any

import anyio
import psycopg
import pytest
from psycopg import sql
from support.daemon_proc import LENSMUX, DaemonProc, running_daemon, wait_until
from support.mcp_session import mcp_client, ok
from support.postgres_server import PostgresServer, running_postgres
from support.projects import git

from lensmux.graph.index.postgres.database.schema import READER_ROLE, WRITER_ROLE, migrate

pytestmark = [pytest.mark.slow]


async def _mcp_search(daemon: DaemonProc, root: Path, query: str) -> tuple[str, dict[str, Any]]:
    async with mcp_client(daemon, root) as client:
        return await ok(client, "search_code", query=query)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _config(dsn: str) -> str:
    return f'[index]\nstore = "postgres"\ndsn = "{dsn}"\n\n[daemon.embedding]\nquery_adapter = false\n'


def _search(daemon: DaemonProc, root: Path, query: str) -> dict[str, Any]:
    result: dict[str, Any] = daemon.call("lensmux/hybridSearch", {"query": query, "root": str(root)}, timeout=300)
    return result


def test_a_clone_searches_the_published_commit_with_its_own_changes_over_it(
    py_project: Path, tmp_path: Path, team_database: str
) -> None:
    git(py_project, "init", "-q")
    git(py_project, "add", "-A")
    git(py_project, "commit", "-q", "-m", "first")
    head = git(py_project, "rev-parse", "HEAD")

    with running_daemon(tmp_path / "a", _config(team_database)) as publisher:
        result = publisher.run_cli("index", str(py_project), "--publish", "--json", timeout=600)
        assert result.returncode == 0, result.stderr
        published = json.loads(result.stdout.strip().splitlines()[-1])
        assert published["commit"] == head and published["files"] >= 3 and published["vectors"] == published["chunks"]

    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(py_project), str(clone)], check=True)
    (clone / "demo" / "util.py").write_text(
        (clone / "demo" / "util.py").read_text()
        + "\n\ndef reconcile_ledger_entries(entries: list[int]) -> int:\n    return sum(entries)\n"
    )
    port = _free_port()
    with running_daemon(tmp_path / "b", _config(team_database) + f"\n[daemon.http]\nport = {port}\n") as consumer:
        result = consumer.run_cli("index", str(clone), "--wait", "--json", timeout=600)
        assert result.returncode == 0, result.stderr
        status = consumer.call("lensmux/indexStatus", {"root": str(clone)})
        assert status["files"] == 1, (status["team_warning"], status["shared"])
        assert status["shared"]["commit"] == head
        response = _search(consumer, clone, "reconcile ledger entries")
        assert response["shared"]["commit"] == head
        assert response["ranked_symbols"][0]["name"] == "reconcile_ledger_entries"
        scaled = _search(consumer, clone, "multiply a value by repeated addition")
        assert "scale" in [s["name"] for s in scaled["ranked_symbols"][:3]]
        assert "Calculator" in {s["name"] for s in _search(consumer, clone, "Calculator compute")["ranked_symbols"]}
        shown = consumer.run_cli("search", "reconcile ledger entries", "--root", str(clone), timeout=300)
        assert shown.returncode == 0, shown.stderr
        assert f"team's index of commit {head[:12]}" in shown.stdout and "reconcile_ledger_entries" in shown.stdout
        assert f"team index: commit {head[:12]} (1 of its files answered locally)" in consumer.run_cli("status").stdout
        # The loopback HTTP API is the same method: it names the shared commit too.
        body = json.dumps({"query": "reconcile ledger entries", "root": str(clone)}).encode()
        request = urllib.request.Request(f"http://127.0.0.1:{port}/api/v1/hybrid-search", data=body, method="POST")
        with urllib.request.urlopen(request, timeout=120) as answer:
            over_http = json.loads(answer.read())
        assert over_http["shared"]["commit"] == head
        assert over_http["ranked_symbols"][0]["name"] == "reconcile_ledger_entries"
        # And the assistant's search_code tool, through `lensmux mcp`.
        text, structured = anyio.run(_mcp_search, consumer, clone, "reconcile ledger entries")
        assert structured["shared"]["commit"] == head and structured["hits"][0]["symbol"] == "reconcile_ledger_entries"
        assert f"team's index of commit {head[:12]}" in text

        # The team publishes a newer commit; the clone pulls it and its next run moves onto it.
        (py_project / "demo" / "audit.py").write_text(
            "def audit_trail_export(rows: list[str]) -> str:\n    return ''\n"
        )
        git(py_project, "add", "-A")
        git(py_project, "commit", "-q", "-m", "second")
        second = git(py_project, "rev-parse", "HEAD")
        with running_daemon(tmp_path / "a2", _config(team_database)) as publisher:
            assert publisher.run_cli("index", str(py_project), "--publish", timeout=600).returncode == 0
        git(clone, "stash", "-q")
        git(clone, "pull", "-q", "--ff-only")
        assert consumer.run_cli("index", str(clone), "--wait", timeout=600).returncode == 0

        def settled() -> bool:
            # The watcher's events of the stash and the pull may land after the run: nothing differs now.
            status = consumer.call("lensmux/indexStatus", {"root": str(clone)})
            return bool(status["shared"]) and status["shared"]["commit"] == second and status["files"] == 0

        wait_until(settled, timeout=60, what="the clone on the second commit, nothing indexed locally")
        found = _search(consumer, clone, "audit trail export")
        assert found["ranked_symbols"][0]["name"] == "audit_trail_export"

    with running_daemon(tmp_path / "c", _config(f"host={tmp_path / 'nowhere'} dbname=none connect_timeout=1")) as alone:
        result = alone.run_cli("index", str(clone), "--wait", "--json", timeout=600)
        assert result.returncode == 0, result.stderr
        response = _search(alone, clone, "audit trail export")
        assert response["shared"] is None
        assert any("team index not used" in w for w in response["warnings"])
        assert response["ranked_symbols"][0]["name"] == "audit_trail_export"


def test_team_init_and_grant_prepare_a_database_from_the_command_line(
    postgres_server: PostgresServer, py_project: Path
) -> None:
    git(py_project, "init", "-q")
    git(py_project, "add", "-A")
    git(py_project, "commit", "-q", "-m", "first")
    repo = git(py_project, "rev-list", "--max-parents=0", "HEAD")
    with postgres_server.fresh_database() as name:
        dsn = postgres_server.dsn(name)
        with postgres_server.admin() as conn:
            for role in ("devs", "ci"):  # `team grant` names roles that exist
                if conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (role,)).fetchone() is None:
                    conn.execute(sql.SQL("CREATE ROLE {}").format(sql.Identifier(role)))
        for args in (["init"], ["grant", "devs", "--root", str(py_project)], ["grant", "--publisher", "ci"]):
            done = subprocess.run(
                [LENSMUX, "team", *args, "--dsn", dsn], capture_output=True, text=True, cwd=py_project, check=False
            )
            assert done.returncode == 0, done.stderr
        with psycopg.connect(dsn) as conn:
            assert conn.execute("SELECT repo, role, can_write FROM lensmux.grants ORDER BY role").fetchall() == [
                (repo, "ci", True),
                (repo, "devs", False),
            ]
            member = "SELECT pg_has_role(%s, %s, 'MEMBER')"
            assert conn.execute(member, ("devs", READER_ROLE)).fetchone() == (True,)
            assert conn.execute(member, ("ci", WRITER_ROLE)).fetchone() == (True,)
        refused = subprocess.run(
            [LENSMUX, "team", "init", "--dsn", dsn.replace("user=postgres", "user=nobody_here")],
            capture_output=True,
            text=True,
            check=False,
        )
        assert refused.returncode == 1 and "lensmux:" in refused.stderr


def test_a_team_store_lost_under_a_search_leaves_the_root_on_its_local_index(py_project: Path, tmp_path: Path) -> None:
    git(py_project, "init", "-q")
    git(py_project, "add", "-A")
    git(py_project, "commit", "-q", "-m", "first")
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(py_project), str(clone)], check=True)
    directory = Path(tempfile.mkdtemp(prefix="lensmux-pg-lost-"))
    directory.chmod(0o755)
    try:
        with running_postgres(directory / "data") as server, server.fresh_database() as name:
            dsn = server.dsn(name)
            with psycopg.connect(dsn, autocommit=True) as conn:
                migrate(conn)
            with running_daemon(tmp_path / "a", _config(dsn)) as publisher:
                done = publisher.run_cli("index", str(py_project), "--publish", timeout=600)
                assert done.returncode == 0, done.stderr
            with running_daemon(tmp_path / "b", _config(dsn)) as consumer:
                assert consumer.run_cli("index", str(clone), "--wait", timeout=600).returncode == 0
                assert _search(consumer, clone, "scale a value")["shared"] is not None
                server.stop()
                response = _search(consumer, clone, "multiply a value by repeated addition")
                assert response["shared"] is None
                assert any("team index lost" in w for w in response["warnings"]), response["warnings"]
                # The root indexes every file locally now, and answers from it.
                consumer.run_cli("index", str(clone), "--wait", timeout=600)
                later = _search(consumer, clone, "multiply a value by repeated addition")
                assert "scale" in [s["name"] for s in later["ranked_symbols"][:3]]
    finally:
        shutil.rmtree(directory, ignore_errors=True)
