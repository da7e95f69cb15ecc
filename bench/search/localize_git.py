"""The git side of the localization benchmark: reading a mirror's history, and one worktree per project.

Everything goes through the `git` command. Mirrors are only read; checkouts are
local clones sharing the mirror's objects (`git clone --shared --no-checkout`),
under bench/out/localize/. The miner moves its clone with `git checkout -f`; the
indexed tree, which a daemon watches, is moved by `sync_tree`, which rewrites changed
files in place: `git checkout` replaces a file by unlinking it and creating a new one,
and the daemon's watcher drops a file whose deletion it sees even when the file is
back by the time it looks (reported with the benchmark; docs/benchmarks.md).
"""

from __future__ import annotations

import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "Commit",
    "GitError",
    "changed_paths",
    "checkout",
    "commit_info",
    "diff_texts",
    "git",
    "rev_list",
    "shared_clone",
    "show",
    "sync_tree",
]


class GitError(Exception):
    """A git command failed."""


def git(repo: Path, *args: str, check: bool = True) -> str:
    """Run `git -C repo args...`; its stdout (decoded leniently)."""
    done = subprocess.run(
        ["git", "-c", "core.quotePath=false", "-C", str(repo), *args],
        capture_output=True,
        check=False,
    )
    if check and done.returncode != 0:
        raise GitError(f"git {' '.join(args[:3])} in {repo}: {done.stderr.decode(errors='replace').strip()[:500]}")
    return done.stdout.decode("utf-8", errors="replace")


@dataclass(frozen=True, slots=True)
class Commit:
    """A commit with one parent."""

    sha: str
    parent: str
    date: str  # committer date, ISO
    message: str

    @property
    def subject(self) -> str:
        """The first line of the message."""
        return self.message.strip().split("\n", 1)[0]


def rev_list(repo: Path, pin: str, since: str) -> list[str]:
    """Non-merge commits reachable from `pin` committed since `since`, oldest first (topological)."""
    out = git(repo, "rev-list", "--no-merges", "--topo-order", "--reverse", f"--since={since}", pin)
    return [line for line in out.split("\n") if line]


def commit_info(repo: Path, sha: str) -> Commit | None:
    """The commit's parent, date and message; None for a root commit or a merge."""
    out = git(repo, "show", "-s", "--format=%P%x00%cI%x00%B", sha)
    parents, date, message = out.split("\x00", 2)
    if len(parents.split()) != 1:
        return None
    return Commit(sha, parents.strip(), date, message)


def changed_paths(repo: Path, parent: str, sha: str) -> list[tuple[str, str, str | None]]:
    """(status letter, parent path, child path or None) of every file the commit modified, renamed or deleted."""
    out = git(repo, "diff", "--name-status", "-M", "--no-color", parent, sha)
    paths: list[tuple[str, str, str | None]] = []
    for line in out.split("\n"):
        fields = line.split("\t")
        status = fields[0][:1]
        if len(fields) >= 2 and status in {"M", "R", "D", "T"}:
            paths.append((status, fields[1], None if status == "D" else fields[-1]))
    return paths


def diff_texts(old: str, new: str) -> str:
    """`git diff --no-index -U0 -w --ignore-blank-lines` of two texts (as files a/old, b/new)."""
    with tempfile.TemporaryDirectory(prefix="localize-diff-") as tmp:
        (Path(tmp) / "old").write_text(old, encoding="utf-8", errors="surrogateescape")
        (Path(tmp) / "new").write_text(new, encoding="utf-8", errors="surrogateescape")
        done = subprocess.run(
            ["git", "diff", "--no-index", "-U0", "-w", "--ignore-blank-lines", "--no-color", "--no-ext-diff",
             "old", "new"],
            cwd=tmp, capture_output=True, check=False,
        )  # fmt: skip
    if done.returncode not in (0, 1):
        raise GitError(f"git diff --no-index: {done.stderr.decode(errors='replace').strip()[:500]}")
    return done.stdout.decode("utf-8", errors="replace")


def show(repo: Path, sha: str, path: str) -> str:
    """A file's text at a commit."""
    return git(repo, "show", f"{sha}:{path}")


def shared_clone(mirror: Path, dest: Path) -> Path:
    """A local clone of the mirror sharing its objects, no files checked out (reused if present)."""
    if not (dest / ".git").is_dir():
        dest.parent.mkdir(parents=True, exist_ok=True)
        done = subprocess.run(
            ["git", "clone", "--quiet", "--shared", "--no-checkout", str(mirror), str(dest)],
            capture_output=True,
            check=False,
        )
        if done.returncode != 0:
            raise GitError(f"git clone {mirror}: {done.stderr.decode(errors='replace').strip()[:500]}")
    return dest


def sync_tree(work: Path, sha: str) -> list[str]:
    """Move the clone's files from its HEAD to `sha` writing each changed file in place; the paths changed."""
    head = git(work, "rev-parse", "HEAD").strip()
    out = git(work, "diff", "--raw", "-z", "--no-renames", "--no-abbrev", head, sha)
    fields = out.split("\0")
    entries = [
        (meta[1:].split(" "), path)
        for meta, path in zip(fields[0::2], fields[1::2], strict=False)
        if meta.startswith(":")
    ]
    # Deletions first: a file may replace a directory whose files go.
    for (_, new_mode, _, _, status), path in entries:
        target = work / path
        if (status == "D" or new_mode == "160000") and (target.is_symlink() or target.is_file()):
            target.unlink()
            for parent in target.parents:
                if parent == work or any(parent.iterdir()):
                    break
                parent.rmdir()
    for (_, new_mode, _, new_blob, status), path in entries:
        target = work / path
        if status == "D" or new_mode == "160000":  # gone, or a submodule (never checked out)
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        if target.is_symlink() or (new_mode == "120000" and target.exists()):
            target.unlink()
        if new_mode == "120000":
            target.symlink_to(git(work, "cat-file", "blob", new_blob))
            continue
        data = subprocess.run(["git", "-C", str(work), "cat-file", "blob", new_blob], capture_output=True, check=True)
        with target.open("wb") as handle:  # truncates the same inode: a modification, not a deletion
            handle.write(data.stdout)
    changed = [path for _, path in entries]
    git(work, "update-ref", "--no-deref", "HEAD", sha)
    git(work, "read-tree", sha)
    return changed


def checkout(work: Path, sha: str) -> None:
    """Make the clone's files those of `sha` (untracked files removed, ignored ones kept)."""
    git(work, "checkout", "--quiet", "--force", "--detach", sha)
    git(work, "clean", "-q", "-f", "-d")
