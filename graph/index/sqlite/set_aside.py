"""Indexes of another schema are kept for the lensmux that reads them, never deleted.

An index is a cache of the working tree, but not only that: the call graph the daemon
learned through the language servers (hours of work on a large root) lives in it too. So a
database written for another schema (by a newer lensmux before a downgrade, or an older one
that this one cannot convert) is moved whole, the database with its WAL and its vector files,
into `<dir>/schema-<N>/`, and a lensmux whose SCHEMA_VERSION is N takes it back on its next
open, first setting aside the index that replaced it in the same way. A downgrade and the
upgrade after it lose nothing; files changed meanwhile are found by the usual reconcile.

Every move must survive a kill at any moment, so it is made of renames within `<dir>`:
- setting aside moves the files into `schema-<N>.partial/`, then renames that folder to
  `schema-<N>/` in one step; a `.partial` found on open is moved back first (undone);
- taking back renames `schema-<N>/` to `restoring/` in one step, then moves its files out;
  a `restoring/` found on open is finished first (the index it replaces was set aside
  completely before the rename).
The caller holds the directory's lock throughout.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import sqlite3
from pathlib import Path

log = logging.getLogger(__name__)

# The root's database; database.py opens it by this name.
DB_NAME = "index.sqlite"
_RESTORING = "restoring"
_PARTIAL = ".partial"
# The database, its journal files and the vector generations (vectors.py's names).
_INDEX_FILE = re.compile(rf"^({re.escape(DB_NAME)}(-wal|-shm)?|vectors-\d+\.hnsw(\.tmp)?)$")


def aside_dir(directory: Path, schema: str) -> Path:
    """Where an index of `schema` is kept: `<dir>/schema-<N>` (N sanitised)."""
    return directory / f"schema-{re.sub(r'[^A-Za-z0-9._-]+', '_', schema) or 'unknown'}"


def _index_files(directory: Path) -> list[Path]:
    files = [p for p in directory.iterdir() if p.is_file() and _INDEX_FILE.match(p.name)]
    # The database last: until it has gone, what is left still opens as the same index.
    return sorted(files, key=lambda p: (p.name == DB_NAME, p.name))


def _empty_into(folder: Path, directory: Path) -> None:
    """Move the index files of `folder` back into `directory`, then remove `folder`."""
    _move_all(folder, directory)
    try:
        folder.rmdir()
    except OSError as exc:
        log.error("%s: cannot remove (%s); its files are kept", folder, exc)


def _move_all(source: Path, target: Path) -> None:
    for path in _index_files(source):
        destination = target / path.name
        if destination.exists():
            # Cannot happen through this module (every move empties one side first); keep both.
            log.error("%s: %s already exists; leaving %s where it is", target, destination.name, path)
            continue
        os.replace(path, destination)


def finish_interrupted(directory: Path) -> None:
    """Undo a setting aside or finish a taking back that a kill interrupted."""
    for partial in directory.glob(f"schema-*{_PARTIAL}"):
        log.warning("%s: undoing an interrupted setting aside", partial)
        _empty_into(partial, directory)
    restoring = directory / _RESTORING
    if restoring.is_dir():
        log.warning("%s: finishing an interrupted taking back", restoring)
        _empty_into(restoring, directory)


def set_aside(directory: Path, schema: str) -> Path:
    """Move the index in `directory` into `schema-<schema>/` and return that folder.

    An earlier index of the same schema kept there is replaced: it is older than this one,
    which that schema's lensmux took back and wrote to since.
    """
    target = aside_dir(directory, schema)
    staging = target.with_name(target.name + _PARTIAL)
    staging.mkdir(exist_ok=True)
    _move_all(directory, staging)
    if target.exists():
        shutil.rmtree(target)
    os.replace(staging, target)
    return target


def schema_of(db: Path) -> str | None:
    """The schema version a database says it has, or None when it cannot be read."""
    # Not a read-only URI: that cannot open a WAL database whose -shm is missing.
    try:
        conn = sqlite3.connect(db)
    except sqlite3.Error:
        return None
    try:
        row = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    except sqlite3.Error:
        return None
    finally:
        conn.close()
    return str(row[0]) if row else None


def take_back(directory: Path, schema: str) -> str | None:
    """Restore an index of `schema` kept by another lensmux version; a note when one was.

    The index in its place (another version's) is set aside first (as `schema-unreadable/`
    when its schema cannot be read), unless it claims `schema` itself: then the kept one is
    left alone rather than overwritten.
    """
    kept = aside_dir(directory, schema)
    if not (kept / DB_NAME).is_file():
        return None
    present = directory / DB_NAME
    replaced = ""
    if present.exists():
        found = schema_of(present) or "unreadable"
        if found == schema:
            log.warning("%s: an index of schema %s is in place; %s left as it is", directory, schema, kept)
            return None
        replaced = f"; the index of schema {found} it replaces kept in {set_aside(directory, found)}"
    restoring = directory / _RESTORING
    os.replace(kept, restoring)
    _empty_into(restoring, directory)
    note = f"took back the index of schema {schema} kept in {kept}{replaced}"
    log.warning("%s: %s", directory, note)
    return note
