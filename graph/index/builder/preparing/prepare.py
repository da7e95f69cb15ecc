"""Turning one file on disk into what the store writes: text, hash, symbols, chunks, tokens."""

from __future__ import annotations

import hashlib
import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread

from lensmux.graph.index.builder.files.junk import junk_reason
from lensmux.graph.index.builder.files.walk import SourceText, WalkedFile, read_source
from lensmux.graph.index.builder.preparing.chunking import ChunkDraft, chunk_file
from lensmux.graph.index.builder.preparing.document_symbols import parse_document_symbols
from lensmux.graph.index.config import IndexConfig
from lensmux.graph.index.identifiers import mentions
from lensmux.graph.index.protocols import Embedder, SymbolSource
from lensmux.graph.index.records import FileStamp, FileWrite

log = logging.getLogger(__name__)


# The mtime stored for text that came from an editor's buffer rather than the disk: it
# matches no file, so the next full run compares the disk's content with it again.
BUFFER_MTIME_NS = -1


@dataclass(frozen=True, slots=True)
class Prepared:
    """A file ready to be embedded and written; walked holds the stat it was read under."""

    walked: WalkedFile
    write: FileWrite

    @property
    def from_buffer(self) -> bool:
        """Whether the text came from an editor's buffer, not the disk (so disk stats say nothing)."""
        return self.walked.mtime_ns == BUFFER_MTIME_NS


@dataclass(frozen=True, slots=True)
class Unchanged:
    """Same content as indexed; only mtime/size are refreshed."""

    walked: WalkedFile


@dataclass(frozen=True, slots=True)
class Unreadable:
    """Gone, too big, binary, not UTF-8, minified or generated: removed from the index if it was there."""

    walked: WalkedFile


Outcome = Prepared | Unchanged | Unreadable


def stat_walked(root: Path, rel: str, language: str) -> WalkedFile | None:
    """A fresh WalkedFile for rel, or None when it is not a regular file any more."""
    try:
        st = os.stat(root / rel, follow_symlinks=False)
    except OSError:
        return None
    if not os.path.isfile(root / rel) or os.path.islink(root / rel):
        return None
    return WalkedFile(rel, language, st.st_size, st.st_mtime_ns)


def still_current(root: Path, walked: WalkedFile) -> bool:
    """Whether the file still has the size and mtime it had when it was read."""
    now = stat_walked(root, walked.rel, walked.language)
    if now is None:
        return False
    return (now.size, now.mtime_ns) == (walked.size, walked.mtime_ns)


async def _document_symbols(
    source: SymbolSource, path: Path, language: str, text: str, timeout: float
) -> tuple[list[dict[str, Any]] | None, str]:
    try:
        with anyio.fail_after(timeout):
            raw = await source.document_symbols(path, language, text)
    except TimeoutError:
        log.warning("documentSymbol for %s timed out after %.0f s; indexing it as windows", path, timeout)
        return None, "failed"
    except Exception as exc:
        # The symbol source wraps a language server: one file failing must not stop the
        # run. The file is stored as windows with structure 'failed' and retried next run.
        log.warning("documentSymbol for %s failed (%s); indexing it as windows", path, exc)
        return None, "failed"
    return raw, ("none" if raw is None else "lsp")


async def prepare_file(
    root: Path,
    walked: WalkedFile,
    known: FileStamp | None,
    *,
    symbols: SymbolSource,
    embedder: Embedder,
    config: IndexConfig,
    keep_generated: bool = False,
) -> Outcome:
    """Read, hash and (unless unchanged) get symbols for, chunk and count tokens of one file."""
    path = root / walked.rel
    source = await anyio.to_thread.run_sync(read_source, path, config.max_file_bytes)
    if source is None:
        return Unreadable(walked)
    return await _prepare_source(
        root, walked, source, known, symbols=symbols, embedder=embedder, config=config, keep_generated=keep_generated
    )


async def prepare_text(
    root: Path,
    walked: WalkedFile,
    text: str,
    known: FileStamp | None,
    *,
    symbols: SymbolSource,
    embedder: Embedder,
    config: IndexConfig,
    keep_generated: bool = False,
) -> Outcome:
    """prepare_file for an editor's text of the file (walked.mtime_ns is BUFFER_MTIME_NS)."""
    source = SourceText(text, hashlib.sha256(text.encode("utf-8", "replace")).hexdigest())
    return await _prepare_source(
        root, walked, source, known, symbols=symbols, embedder=embedder, config=config, keep_generated=keep_generated
    )


async def _prepare_source(
    root: Path,
    walked: WalkedFile,
    source: SourceText,
    known: FileStamp | None,
    *,
    symbols: SymbolSource,
    embedder: Embedder,
    config: IndexConfig,
    keep_generated: bool,
) -> Outcome:
    path = root / walked.rel
    junk = None if keep_generated else junk_reason(walked.rel, source.text)
    if junk is not None:
        log.info("not indexing %s: %s", walked.rel, junk)
        return Unreadable(walked)
    if known is not None and known.sha256 == source.sha256 and known.structure != "failed":
        return Unchanged(walked)
    raw, structure = await _document_symbols(symbols, path, walked.language, source.text, config.symbol_timeout_s)

    def build() -> FileWrite:
        parsed = parse_document_symbols(raw) if raw is not None else []
        chunks: list[ChunkDraft] = chunk_file(
            walked.rel,
            walked.language,
            source.text,
            parsed if raw is not None else None,
            config.chunks,
            measure=embedder.count_tokens,
        )
        return FileWrite(
            path=walked.rel,
            language=walked.language,
            sha256=source.sha256,
            mtime_ns=walked.mtime_ns,
            size=walked.size,
            structure=structure,
            symbols=parsed,
            chunks=chunks,
            tokens=[embedder.count_tokens(c.text) for c in chunks],
            mentions=mentions(source.text),
        )

    return Prepared(walked, await anyio.to_thread.run_sync(build))
