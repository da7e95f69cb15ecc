"""Token counts remembered by text: a second worktree or a clone pays the tokenizer once (issue 23).

Preparing a file counts the tokens of every window the chunker tries and of every chunk it
keeps (graph/index/builder/preparing/chunking.py, prepare.py). A clone or a second worktree of an
indexed tree asks for the same texts again (a chunk's header names the root-relative path,
not the root), and with every vector a hit in the vector cache, counting was the largest
share of the daemon's CPU for a clone of the 100k monorepo (py-spy: 55% of its samples).
A count is a function of the text and the tokenizer alone, so the remembered one is the
one the tokenizer would give: nothing indexed or answered changes.

Keys are 128-bit BLAKE2b digests of the text (lone surrogates included), not the texts,
and at most `limit` of them are kept, least recently used dropped first (about 10 MB per
100,000; `[daemon.index] token_memo_entries`, 0 remembers nothing; `lensmux status` shows
its entries, hits and misses). Thread-safe: preparers count in several worker threads at once.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable, Sequence

# About 10 MB; a 100k-line tree asks for some tens of thousands of distinct texts.
DEFAULT_LIMIT = 100_000


def _key(text: str) -> bytes:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


class TokenMemo:
    """A bounded, least-recently-used map from a text's digest to its token count."""

    def __init__(self, limit: int = DEFAULT_LIMIT) -> None:
        self.limit = limit
        self._counts: dict[bytes, int] = {}
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        return len(self._counts)

    def stats(self) -> dict[str, int]:
        """Entries, cap, hits and misses, for `lensmux status`."""
        with self._lock:
            return {"entries": len(self._counts), "limit": self.limit, "hits": self.hits, "misses": self.misses}

    def counts(self, texts: Sequence[str], count: Callable[[Sequence[str]], list[int]]) -> list[int]:
        """Each text's count: remembered, or from `count` (called once, with the texts not remembered)."""
        if self.limit <= 0:
            return count(texts)
        keys = [_key(t) for t in texts]
        found: dict[bytes, int] = {}
        with self._lock:
            for key in keys:
                n = self._counts.pop(key, None)
                if n is not None:
                    self._counts[key] = n  # now the most recently used
                    found[key] = n
        remembered = sum(1 for k in keys if k in found)
        missing = list(dict.fromkeys(k for k in keys if k not in found))
        if missing:
            where = {k: i for i, k in reversed(list(enumerate(keys)))}
            fresh = count([texts[where[k]] for k in missing])
            found.update(zip(missing, fresh, strict=True))
            with self._lock:
                for key, n in zip(missing, fresh, strict=True):
                    self._counts.pop(key, None)
                    self._counts[key] = n
                while len(self._counts) > self.limit:
                    del self._counts[next(iter(self._counts))]
        with self._lock:
            self.hits += remembered
            self.misses += len(keys) - remembered
        return [found[k] for k in keys]
