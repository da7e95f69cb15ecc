"""Response cache of one instance: read-only results, never stale after an edit.

Entries carry the generation they were computed at: the document's own for
single-document methods, the workspace's for everything that can look at
other files. Any edit bumps the generations it may affect, so a lookup
compares two integers; stale entries simply stop matching and age out of the
byte-bounded LRU.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

import msgspec

# Results that depend on one document only.
DOCUMENT_METHODS = frozenset({"textDocument/documentSymbol", "textDocument/foldingRange"})
# Results that may depend on other files (a definition in a header, a hover
# type from another module): invalidated by any change in the workspace.
WORKSPACE_METHODS = frozenset(
    {
        "textDocument/definition",
        "textDocument/declaration",
        "textDocument/typeDefinition",
        "textDocument/implementation",
        "textDocument/references",
        "textDocument/hover",
        "textDocument/prepareCallHierarchy",
        "callHierarchy/incomingCalls",
        "callHierarchy/outgoingCalls",
        "textDocument/prepareTypeHierarchy",
        "typeHierarchy/supertypes",
        "typeHierarchy/subtypes",
        "workspace/symbol",
    }
)
CACHEABLE = DOCUMENT_METHODS | WORKSPACE_METHODS
_encoder = msgspec.json.Encoder(order="sorted")
# What one entry costs beyond its key and value bytes (dict slot, entry object,
# bytes headers), measured under load: the byte bound must count it.
_ENTRY_OVERHEAD = 480


@dataclass(slots=True)
class CacheKey:
    """What a lookup needs: the canonical key and the document it depends on."""

    key: bytes
    method: str
    uri: str | None


@dataclass(slots=True)
class _Entry:
    value: bytes
    generation: int
    uri: str | None


@dataclass(slots=True)
class MethodStats:
    """Hits and misses of one method."""

    hits: int = 0
    misses: int = 0


@dataclass
class ResponseCache:
    """Byte-bounded LRU of raw results with generation-based invalidation."""

    max_bytes: int
    enabled: bool = True
    _entries: OrderedDict[bytes, _Entry] = field(default_factory=OrderedDict)
    _bytes: int = 0
    workspace_generation: int = 0
    disk_epoch: int = 0
    _doc_generations: dict[str, int] = field(default_factory=dict)
    stats: dict[str, MethodStats] = field(default_factory=dict)

    def key_for(self, method: str, params: Any) -> CacheKey | None:
        """The cache key of a request, or None if it must not be cached."""
        if not self.enabled or method not in CACHEABLE or not isinstance(params, dict):
            return None
        if "partialResultToken" in params:
            return None
        # Progress tokens differ per request and do not change the answer.
        canonical = {k: v for k, v in params.items() if k != "workDoneToken"}
        doc = params.get("textDocument")
        uri = doc.get("uri") if isinstance(doc, dict) else None
        if method in DOCUMENT_METHODS and not isinstance(uri, str):
            return None
        return CacheKey(method.encode() + b"\0" + _encoder.encode(canonical), method, uri)

    def generation_for(self, key: CacheKey) -> int:
        """The generation a result computed now would be valid for."""
        if key.method in DOCUMENT_METHODS and key.uri is not None:
            # Edits of other documents leave this one's results valid; disk changes do not.
            return self._doc_generations.get(key.uri, 0) * (1 << 32) + self.disk_epoch
        return self.workspace_generation

    def get(self, key: CacheKey) -> bytes | None:
        """A still-valid cached result, counting the hit or miss."""
        stats = self.stats.setdefault(key.method, MethodStats())
        entry = self._entries.get(key.key)
        if entry is None or entry.generation != self.generation_for(key):
            stats.misses += 1
            return None
        self._entries.move_to_end(key.key)
        stats.hits += 1
        return entry.value

    def put(self, key: CacheKey, value: bytes, generation: int) -> None:
        """Store a result computed at `generation`, unless something changed since."""
        if generation != self.generation_for(key) or len(value) > self.max_bytes // 4:
            return
        old = self._entries.pop(key.key, None)
        if old is not None:
            self._bytes -= len(old.value) + len(key.key) + _ENTRY_OVERHEAD
        self._entries[key.key] = _Entry(value, generation, key.uri)
        self._bytes += len(value) + len(key.key) + _ENTRY_OVERHEAD
        while self._bytes > self.max_bytes and self._entries:
            k, evicted = self._entries.popitem(last=False)
            self._bytes -= len(evicted.value) + len(k) + _ENTRY_OVERHEAD

    def document_changed(self, uri: str) -> None:
        """An edit, save or close of one document: it and every cross-file result are stale."""
        self._doc_generations[uri] = self._doc_generations.get(uri, 0) + 1
        self.workspace_generation += 1

    def boundary(self) -> None:
        """The server's knowledge of the workspace grew (discovery or indexing ended): cross-file results are stale."""
        self.workspace_generation += 1

    def workspace_changed(self) -> None:
        """Files changed on disk, or watched-file events: every result is stale."""
        self.workspace_generation += 1
        self.disk_epoch += 1
        self._entries.clear()
        self._bytes = 0

    def status(self) -> dict[str, Any]:
        """Size and hit rates for `lensmux status`."""
        methods = {
            m: {"hits": s.hits, "misses": s.misses, "hit_rate": round(s.hits / max(1, s.hits + s.misses), 3)}
            for m, s in sorted(self.stats.items())
        }
        return {"enabled": self.enabled, "entries": len(self._entries), "bytes": self._bytes, "methods": methods}
