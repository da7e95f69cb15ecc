"""Repositories and their published commits in the team store.

A repository is recognised by its history, not by a path or a remote URL: its id is the
root commit of the checkout's HEAD (the oldest commit with no parent, the first by name when
a history has several), so every clone and worktree of it finds the same rows. A snapshot is
the index of one commit; it counts as published once its publisher's transaction commits
(`published`), and a consumer uses the published snapshot of the nearest ancestor of its HEAD.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg

from lensmux.graph.index.errors import IndexStoreError

__all__ = [
    "NotARepository",
    "Snapshot",
    "create_snapshot",
    "find_published",
    "git_head",
    "repository_id",
]

# How far back a consumer looks for a published ancestor (commits of first-parent history).
ANCESTOR_DEPTH = 1000
_GIT_TIMEOUT_S = 10


class NotARepository(IndexStoreError):
    """The root is not inside a git checkout with at least one commit."""


@dataclass(frozen=True, slots=True)
class Snapshot:
    """One published (or being published) commit of a repository."""

    id: int
    repo: str
    commit: str
    model_id: str
    dim: int
    published: bool


def _git(root: Path, *args: str) -> str:
    try:
        done = subprocess.run(
            ["git", "-C", str(root), *args], capture_output=True, text=True, timeout=_GIT_TIMEOUT_S, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise NotARepository(f"git failed in {root}: {exc}") from exc
    if done.returncode != 0:
        raise NotARepository(f"{root} is not a git checkout with commits: {done.stderr.strip()}")
    return done.stdout.strip()


def repository_id(root: Path) -> str:
    """The root commit of HEAD's history: the same in every clone and worktree of the repository."""
    roots = sorted(_git(root, "rev-list", "--max-parents=0", "HEAD").split())
    if not roots:
        raise NotARepository(f"{root} has no commits")
    return roots[0]


def git_head(root: Path) -> str:
    """The commit checked out at root."""
    return _git(root, "rev-parse", "HEAD")


def ancestors(root: Path, depth: int = ANCESTOR_DEPTH) -> list[str]:
    """HEAD and its ancestors, nearest first (commit-date order, at most depth)."""
    return _git(root, "rev-list", f"--max-count={depth}", "HEAD").split()


def _snapshot(row: tuple[Any, ...]) -> Snapshot:
    return Snapshot(int(row[0]), str(row[1]), str(row[2]), str(row[3]), int(row[4]), bool(row[5]))


_COLUMNS = "id, repo, commit, model_id, dim, published"


def find_published(conn: psycopg.Connection[Any], repo: str, commits: list[str], model_id: str) -> Snapshot | None:
    """The published snapshot of the first of commits (nearest first) that has one, for this model."""
    if not commits:
        return None
    row = conn.execute(
        "SELECT s.id, s.repo, s.commit, s.model_id, s.dim, s.published FROM lensmux.snapshots s"
        " JOIN unnest(%s::text[]) WITH ORDINALITY AS c(sha, n) ON c.sha = s.commit"
        " WHERE s.repo = %s AND s.model_id = %s AND s.published ORDER BY c.n LIMIT 1",
        (commits, repo, model_id),
    ).fetchone()
    return _snapshot(row) if row else None


def create_snapshot(conn: psycopg.Connection[Any], repo: str, commit: str, model_id: str, dim: int) -> Snapshot:
    """A new, empty, unpublished snapshot, replacing any earlier one of the same commit and model.

    Runs inside the publisher's transaction: readers keep seeing the earlier snapshot until
    the new one commits, published.
    """
    conn.execute(
        "DELETE FROM lensmux.snapshots WHERE repo = %s AND commit = %s AND model_id = %s", (repo, commit, model_id)
    )
    row = conn.execute(
        f"INSERT INTO lensmux.snapshots(repo, commit, model_id, dim) VALUES (%s, %s, %s, %s) RETURNING {_COLUMNS}",
        (repo, commit, model_id, dim),
    ).fetchone()
    assert row is not None  # INSERT ... RETURNING returns the row
    return _snapshot(row)


def mark_published(conn: psycopg.Connection[Any], snapshot: int) -> None:
    """Make the snapshot the one consumers find (visible to them when the transaction commits)."""
    conn.execute("UPDATE lensmux.snapshots SET published = true, published_at = now() WHERE id = %s", (snapshot,))
