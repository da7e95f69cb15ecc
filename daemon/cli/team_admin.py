"""`lensmux team`: prepare a PostgreSQL database as a team store and grant roles on repositories (issue 24).

Run by whoever administers the database (a role that may create the schema and roles),
with the DSN of `[index] dsn` or LENSMUX_INDEX_DSN, or `--dsn`; passwords stay in libpq's
passfile or service file. It talks to PostgreSQL only, never to a daemon.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

# Every `lensmux` command builds this parser, the editors' bridge too: the configuration is
# imported only when `team` runs (as daemon/config.py's INDEX_DSN_ENV, spelled here for that).
INDEX_DSN_ENV = "LENSMUX_INDEX_DSN"
# Dimensions of the packaged models (both 384): the HNSW index of each is made by `team init`.
MODEL_DIMS = (384,)


def _dsn(args: argparse.Namespace) -> str | None:
    from lensmux.daemon.config import ConfigInvalid, load_config

    if args.dsn:
        return str(args.dsn)
    if os.environ.get(INDEX_DSN_ENV):
        return os.environ[INDEX_DSN_ENV]
    try:
        config = load_config(Path(args.config) if args.config else None, explicit=bool(args.config))
    except ConfigInvalid as exc:
        print(f"lensmux: invalid configuration: {exc}", file=sys.stderr)
        return None
    return config.index.dsn or None


def cmd_team(args: argparse.Namespace) -> int:
    """`team init` makes the schema, roles and policies; `team grant`/`revoke` give roles a repository."""
    from lensmux.graph.index import IndexStoreError
    from lensmux.graph.index.postgres.connection import connect
    from lensmux.graph.index.postgres.schema import READER_ROLE, WRITER_ROLE, grant, migrate, revoke
    from lensmux.graph.index.postgres.snapshots import repository_id

    dsn = _dsn(args)
    if dsn is None:
        print(f"lensmux: no team store: give --dsn, set {INDEX_DSN_ENV} or [index] dsn", file=sys.stderr)
        return 2
    try:
        with connect(dsn, application="lensmux team") as conn:
            if args.action == "init":
                migrate(conn, dims=MODEL_DIMS)
                print(f"team store ready: readers join {READER_ROLE}, publishers {WRITER_ROLE}")
                return 0
            repo = args.repository or repository_id(Path(args.root or ".").resolve())
            if args.action == "grant":
                grant(conn, repo, args.role, write=args.write)
                print(f"{args.role} may {'publish and read' if args.write else 'read'} repository {repo}")
            else:
                revoke(conn, repo, args.role)
                print(f"{args.role} no longer has repository {repo}")
            return 0
    except IndexStoreError as exc:
        print(f"lensmux: {exc}", file=sys.stderr)
        return 1
    except Exception as exc:  # psycopg's errors: the database said no (privileges, missing pgvector)
        print(f"lensmux: team store: {str(exc).strip().splitlines()[0] if str(exc).strip() else exc}", file=sys.stderr)
        return 1


def add_team_command(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `lensmux team init|grant|revoke`."""
    team = sub.add_parser("team", help="set up a PostgreSQL team index store and grant roles on repositories")
    team.add_argument("action", choices=["init", "grant", "revoke"])
    team.add_argument("role", nargs="?", help="the PostgreSQL role (or group role) to grant or revoke")
    team.add_argument("--root", help="a checkout of the repository (default: the current directory)")
    team.add_argument("--repository", help="the repository id (its root commit) instead of --root")
    team.add_argument("--write", action="store_true", help="grant: also let the role publish")
    team.add_argument("--dsn", help=f"libpq connection string (default: {INDEX_DSN_ENV}, then [index] dsn)")
    team.add_argument("--config", help="configuration file")
    team.set_defaults(func=cmd_team)
