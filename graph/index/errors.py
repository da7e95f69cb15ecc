"""Errors raised by the persistent index.

IndexStoreError
 +-- IndexCorrupt          a file on disk cannot be trusted (SQLite or vectors)
 +-- IndexSchemaMismatch   a file was written by another schema, model or dimension
 |    +-- IndexOtherSchema  ... by a lensmux of another schema version (kept, not deleted)
 +-- RootNotIndexed        no index exists yet for the asked root
 +-- IndexLocked           another process holds this root's index
 +-- EmbeddingFailed       the embedder raised while indexing
 +-- StoreUnreachable      a shared (team) store's server cannot be reached
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import anyio


class IndexStoreError(Exception):
    """Base of every error the index raises."""


class IndexCorrupt(IndexStoreError):
    """A persisted index file is unreadable, truncated or fails its checksum."""


class IndexSchemaMismatch(IndexStoreError):
    """A persisted index file does not match this schema version, model or dimension."""


class IndexOtherSchema(IndexSchemaMismatch):
    """A persisted index was written for another schema version (`version`, as the file says)."""

    def __init__(self, message: str, version: str) -> None:
        super().__init__(message)
        self.version = version


class RootNotIndexed(IndexStoreError):
    """There is no index for this workspace root yet."""


class IndexLocked(IndexStoreError):
    """Another process already has this root's index open."""


class EmbeddingFailed(IndexStoreError):
    """The embedder failed; the batch was not committed."""


class StoreUnreachable(IndexStoreError):
    """A shared store's server cannot be reached (or refused the connection)."""


def main_error(group: BaseExceptionGroup[BaseException]) -> BaseException:
    """The exception that ended a full run, out of anyio's group (index errors first)."""
    leaves: list[BaseException] = []
    pending: list[BaseException] = [group]
    while pending:
        exc = pending.pop()
        if isinstance(exc, BaseExceptionGroup):
            pending.extend(exc.exceptions)
        elif not isinstance(exc, anyio.BrokenResourceError):
            leaves.append(exc)
    for exc in leaves:
        if isinstance(exc, IndexStoreError):
            return exc
    return leaves[0] if leaves else group


@contextmanager
def store_errors_unwrapped() -> Iterator[None]:
    """Around a task group whose tasks read a store: a store error leaves it as itself.

    anyio wraps whatever a task group's tasks raise in an ExceptionGroup, which no
    `except IndexStoreError` further up matches: a team store lost under a search's expansion
    failed the search instead of falling back to the local index, and one lost under a learning
    round ended the learner and the daemon with it. A group holding anything but store errors
    (a bug) is raised as it is.
    """
    try:
        yield
    except BaseExceptionGroup as group:
        stores, rest = group.split(IndexStoreError)
        if stores is None or rest is not None:
            raise
        raise _first_leaf(stores) from None


def _first_leaf(group: BaseExceptionGroup[BaseException]) -> BaseException:
    first = group.exceptions[0]
    return _first_leaf(first) if isinstance(first, BaseExceptionGroup) else first
