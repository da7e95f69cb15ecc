"""Shared fixtures: the anyio backend, sample projects, a running daemon."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings
from support.daemon_proc import DaemonProc, running_daemon
from support.postgres_server import PostgresServer, running_postgres
from support.projects import write_c_project, write_py_project

# Property tests draw the same examples in every run (no example database either): a run's
# outcome must not depend on which random inputs it happened to draw (issue 25). The fuzz
# tests found what they found with random draws; that stays a thing to do by hand.
settings.register_profile("lensmux", derandomize=True, database=None)
settings.load_profile("lensmux")


@pytest.fixture
def anyio_backend() -> str:
    """Every async test runs on asyncio, the backend the daemon uses."""
    return "asyncio"


@pytest.fixture
def c_project(tmp_path: Path) -> Path:
    """A small C project with calls across files and compile_flags.txt."""
    return write_c_project(tmp_path / "cproj")


@pytest.fixture
def py_project(tmp_path: Path) -> Path:
    """A small Python package with calls across modules."""
    return write_py_project(tmp_path / "pyproj")


@pytest.fixture
def daemon(tmp_path: Path) -> Iterator[DaemonProc]:
    """A running daemon with default configuration and private directories."""
    with running_daemon(tmp_path / "d") as proc:
        yield proc


def have(tool: str) -> bool:
    """Whether an executable is on PATH or in the venv."""
    return shutil.which(tool) is not None or (Path(__file__).parents[1] / ".venv" / "bin" / tool).exists()


def git_init(path: Path) -> None:
    """Make `path` a git repository (a root marker for every server)."""
    subprocess.run(["git", "init", "-q", str(path)], check=True)


@pytest.fixture(scope="session")
def postgres_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PostgresServer]:
    """A real PostgreSQL with pgvector on a Unix socket, for the whole session (tests/support/postgres_server.py)."""
    if os.geteuid() == 0:
        # The server runs as its own system user, which cannot enter pytest's 0700 temporary
        # tree (and pytest resets that tree's mode every session, for every user of it).
        directory = Path(tempfile.mkdtemp(prefix="lensmux-pg-"))
        directory.chmod(0o755)
    else:
        directory = tmp_path_factory.mktemp("postgres")
    try:
        with running_postgres(directory / "data") as server:
            yield server
    finally:
        if os.geteuid() == 0:
            shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture
def team_database(postgres_server: PostgresServer) -> Iterator[str]:
    """A fresh database on the session's server, its schema made by lensmux's migration; yields its DSN."""
    import psycopg
    from support.graph_fakes import DIM

    from lensmux.graph.index.postgres.database.schema import migrate

    with postgres_server.fresh_database() as name:
        dsn = postgres_server.dsn(name)
        with psycopg.connect(dsn, autocommit=True) as conn:
            migrate(conn, dims=(DIM,))
        yield dsn
