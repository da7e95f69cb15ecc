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
    from lensmux.graph.index.team.shared import grant_roles, repository_id, setup_store

    dsn = _dsn(args)
    if dsn is None:
        print(f"lensmux: no team store: give --dsn, set {INDEX_DSN_ENV} or [index] dsn", file=sys.stderr)
        return 2
    try:
        if args.action == "init":
            print(setup_store(dsn, MODEL_DIMS))
            return 0
        roles = [(role, args.write) for role in args.roles] + [(role, True) for role in args.publisher]
        if not roles:
            print("lensmux: name the roles (and --publisher roles)", file=sys.stderr)
            return 2
        repo = args.repository or repository_id(Path(args.root or ".").resolve())
        for line in grant_roles(dsn, repo, roles, revoke_them=args.action == "revoke"):
            print(line)
        return 0
    except IndexStoreError as exc:
        print(f"lensmux: {exc}", file=sys.stderr)
        return 1
    except Exception as exc:  # psycopg's errors: the database said no (privileges, missing pgvector)
        text = str(exc).strip()
        print(f"lensmux: team store: {text.splitlines()[0] if text else type(exc).__name__}", file=sys.stderr)
        return 1


def add_team_command(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `lensmux team init|grant|revoke`."""
    team = sub.add_parser("team", help="set up a PostgreSQL team index store and grant roles on repositories")
    team.add_argument("action", choices=["init", "grant", "revoke"])
    team.add_argument("roles", nargs="*", help="PostgreSQL roles (or group roles) to grant or revoke")
    team.add_argument("--root", help="a checkout of the repository (default: the current directory)")
    team.add_argument("--repository", help="the repository id (its root commit) instead of --root")
    team.add_argument("--write", action="store_true", help="grant: also let the roles publish")
    team.add_argument("--publisher", action="append", default=[], help="grant: a role that also publishes (repeatable)")
    team.add_argument("--dsn", help=f"libpq connection string (default: {INDEX_DSN_ENV}, then [index] dsn)")
    team.add_argument("--config", help="configuration file")
    team.set_defaults(func=cmd_team)
