"""The README's team section works as written (issue 24): its commands and its config, run literally.

The section's `sh` block is run line by line from a checkout: the `lensmux team` commands as
the database's administrator, the rest as CI, whose daemon the README's `lensmux index` starts
itself with the section's `toml` block as its config.toml. A second daemon, a team member's,
with the same block as its config, searches a clone and must name the published commit in
`shared`. libpq finds the roles through a service file (PGSERVICEFILE) defining the services the
README names, `lensmux-admin` and `team`. The server is a real PostgreSQL with pgvector of its
own (tests/support/postgres_server.py): roles are the cluster's, and these must be the README's.
What the README says an administrator does by hand beforehand (the database, the superuser's
`CREATE EXTENSION vector;`, the roles `team grant` names) is done here as a superuser.
"""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from psycopg import sql
from support.daemon_proc import LENSMUX, lensmux_env, running_daemon
from support.postgres_server import PostgresServer, running_postgres
from support.projects import git

pytestmark = [pytest.mark.slow]

README = Path(__file__).resolve().parents[2] / "README.md"
SECTION = "## A team's index (PostgreSQL)"
# Test daemons run side by side: none listens on the default HTTP port.
NO_HTTP = "\n[daemon.http]\nenabled = false\n"


def team_section() -> str:
    """The README's team section, up to the next second-level heading."""
    text = README.read_text(encoding="utf-8")
    start = text.index(SECTION)
    end = text.find("\n## ", start + len(SECTION))
    return text[start : end if end != -1 else len(text)]


def fenced(section: str, language: str) -> list[str]:
    """The section's code blocks of one language."""
    return re.findall(rf"^```{language}\n(.*?)^```", section, flags=re.MULTILINE | re.DOTALL)


def readme_commands() -> list[list[str]]:
    """The `sh` block's commands, each split as a shell would (comments dropped)."""
    (block,) = fenced(team_section(), "sh")
    commands = [shlex.split(line, comments=True) for line in block.splitlines()]
    return [argv for argv in commands if argv]


def readme_config() -> str:
    """The `toml` block: everyone's config.toml."""
    (block,) = fenced(team_section(), "toml")
    return str(block)


def _services(server: PostgresServer, database: str, team_role: str) -> str:
    return (
        f"[lensmux-admin]\nhost={server.socket_dir}\ndbname={database}\nuser=lensmux_admin\n\n"
        f"[team]\nhost={server.socket_dir}\ndbname={database}\nuser={team_role}\n"
    )


@pytest.fixture
def team_server() -> Iterator[PostgresServer]:
    """A server of this test's own: the README's role names are the cluster's, not one database's."""
    directory = Path(tempfile.mkdtemp(prefix="lensmux-pg-readme-"))
    directory.chmod(0o755)  # as root the server runs as a user of its own (tests/conftest.py)
    try:
        with running_postgres(directory / "data") as server:
            yield server
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def _granted_roles(argv: list[str]) -> tuple[list[str], list[str]]:
    """`team grant` argv -> (reader roles, publisher roles)."""
    readers: list[str] = []
    publishers: list[str] = []
    words = iter(argv[3:])
    for word in words:
        if word == "--publisher":
            publishers.append(next(words))
        elif word.startswith("--publisher="):
            publishers.append(word.split("=", 1)[1])
        elif word in ("--dsn", "--root", "--repository", "--config"):
            next(words)
        elif not word.startswith("-"):
            readers.append(word)
    return readers, publishers


def _run(argv: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    assert argv[0] == "lensmux", argv
    return subprocess.run(
        [LENSMUX, *argv[1:]], cwd=cwd, env=env, capture_output=True, text=True, timeout=900, check=False
    )


def test_the_readme_sections_blocks_are_what_this_test_runs() -> None:
    commands = readme_commands()
    assert [argv[:3] for argv in commands if argv[:2] == ["lensmux", "team"]], "no `lensmux team` command"
    assert any(argv[:2] == ["lensmux", "index"] and "--publish" in argv for argv in commands), commands
    assert 'store = "postgres"' in readme_config()


def test_the_readme_team_section_run_as_written_publishes_what_a_members_daemon_searches(
    team_server: PostgresServer, py_project: Path, tmp_path: Path
) -> None:
    commands = readme_commands()
    config = readme_config()
    (grant,) = [argv for argv in commands if argv[:3] == ["lensmux", "team", "grant"]]
    readers, publishers = _granted_roles(grant)
    assert readers and publishers, grant

    database = "teamdb"
    member = "member_of_" + readers[0]
    with team_server.admin() as conn:
        conn.execute("CREATE ROLE lensmux_admin LOGIN CREATEROLE")
        for role in readers + publishers:
            conn.execute(sql.SQL("CREATE ROLE {} LOGIN").format(sql.Identifier(role)))
        conn.execute(
            sql.SQL("CREATE ROLE {} LOGIN IN ROLE {}").format(sql.Identifier(member), sql.Identifier(readers[0]))
        )
        conn.execute(sql.SQL("CREATE DATABASE {} OWNER lensmux_admin").format(sql.Identifier(database)))
    with team_server.admin(database) as conn:
        conn.execute("CREATE EXTENSION vector")

    git(py_project, "init", "-q")
    git(py_project, "add", "-A")
    git(py_project, "commit", "-q", "-m", "first")
    head = git(py_project, "rev-parse", "HEAD")

    # The administrator and CI: one service file (the administrator's role, and CI's as `team`).
    ci_services = tmp_path / "ci.pg_service.conf"
    ci_services.write_text(_services(team_server, database, publishers[0]))
    ci_env = lensmux_env(tmp_path / "ci", {"PGSERVICEFILE": str(ci_services)})
    ci_env.pop("LENSMUX_INDEX_DSN", None)
    (Path(ci_env["XDG_CONFIG_HOME"]) / "lensmux").mkdir(parents=True)
    (Path(ci_env["XDG_CONFIG_HOME"]) / "lensmux" / "config.toml").write_text(config + NO_HTTP)
    # The administrator has no config.toml of lensmux's: the README's commands say all it needs.
    admin_env = lensmux_env(tmp_path / "admin", {"PGSERVICEFILE": str(ci_services)})
    admin_env.pop("LENSMUX_INDEX_DSN", None)
    said: list[str] = []
    try:
        for argv in commands:
            done = _run(argv, py_project, admin_env if argv[:2] == ["lensmux", "team"] else ci_env)
            assert done.returncode == 0, f"{shlex.join(argv)}: {done.stderr}"
            said.append(done.stdout)
    finally:
        # The daemon the README's `lensmux index` started.
        subprocess.run([LENSMUX, "stop"], env=ci_env, capture_output=True, timeout=60, check=False)
    assert any(f"published {head[:12]}" in out for out in said), said

    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(py_project), str(clone)], check=True)
    member_services = tmp_path / "member.pg_service.conf"
    member_services.write_text(_services(team_server, database, member))
    with running_daemon(tmp_path / "m", config, {"PGSERVICEFILE": str(member_services)}) as consumer:
        indexed = consumer.run_cli("index", str(clone), "--wait", "--json", timeout=600)
        assert indexed.returncode == 0, indexed.stderr
        response: dict[str, Any] = consumer.call(
            "lensmux/hybridSearch", {"query": "multiply a value by repeated addition", "root": str(clone)}, timeout=300
        )
        # Only the team store's own warnings count here: on a loaded machine the member's first
        # search may also say its expansion met the budget (the publisher's learner had not
        # finished before the README's publish), which is about pyright, not the section.
        assert not [w for w in response["warnings"] if "team index" in w], response["warnings"]
        assert response["shared"] is not None and response["shared"]["commit"] == head
        assert "scale" in [s["name"] for s in response["ranked_symbols"][:3]]
