"""Bounded caches of a snapshot's records in the reading process.

A published snapshot does not change (a publisher writes a new one), so a consumer may keep
what it read: the search asks for the same symbols and chunks one id at a time, over and
over (the catalog, the ranker's graph), and each question to the server is a round trip
where the embedded store reads a page it already has. The store clears every cache on its
own writes; the bounds keep a daemon's memory independent of the size of the indexes it reads.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")

_MISSING = object()


class Lru(Generic[K, V]):
    """At most `size` entries, the least recently used dropped first; safe from any thread."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._items: OrderedDict[K, V] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: K) -> V | object:
        """The value, or _MISSING."""
        with self._lock:
            value = self._items.get(key, _MISSING)
            if value is not _MISSING:
                self._items.move_to_end(key)
            return value

    def put(self, key: K, value: V) -> None:
        with self._lock:
            self._items[key] = value
            self._items.move_to_end(key)
            while len(self._items) > self.size:
                self._items.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()

    def through(self, key: K, load: Callable[[], V]) -> V:
        """The cached value, else load() stored."""
        found = self.get(key)
        if found is not _MISSING:
            return found  # type: ignore[return-value]
        value = load()
        self.put(key, value)
        return value


def missing(value: object) -> bool:
    """Whether a get() found nothing."""
    return value is _MISSING
