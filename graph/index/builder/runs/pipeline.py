"""A full run as three stages joined by bounded streams: preparing, embedding, writing.

Preparers (`symbol_concurrency` of them) read files, ask for their symbols, chunk them and
look up the vectors at hand (the file's old chunks, the user's vector cache); embedders
(`embed_concurrency`) take whatever prepared files need the model, up to `embed_batch` chunks,
and embed the texts it has to; one writer takes whatever embedded batches are ready, up to
`commit_files`/`commit_chunks`, and writes them in one transaction. A file the model has
nothing to embed for goes from its preparer to the writer: a second worktree's files that its
branch did not change are written while the model embeds the ones it did, where they used to
wait behind those in the embedders' stream and be written after the last one (issue 23). Embedding used
to happen inside the commit, so the model stopped while a batch was written and while the
next one was looked up; two embedding calls in flight also keep both cores busy through
each other's tokenising, pooling and onnxruntime's serial stretches. The streams bound
what is held in memory: at most `commit_files` prepared files waiting for the model, and
`commit_files` embedded batches or files waiting for the writer.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Iterable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from typing import TypeVar

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from lensmux.graph.index.builder.files.walk import WalkedFile
from lensmux.graph.index.builder.preparing.prepare import Outcome
from lensmux.graph.index.builder.runs.commit import BatchWriter, Embedded
from lensmux.graph.index.config import IndexConfig

log = logging.getLogger(__name__)

Prepare = Callable[[WalkedFile], Awaitable[Outcome]]
Commit = Callable[[Embedded], Awaitable[list[WalkedFile]]]
T = TypeVar("T")


@dataclass
class RunClock:
    """Where a full run's time went: the model embedding, or idle and why (logged at the end)."""

    embedders: int
    started: float = field(default_factory=time.perf_counter)
    busy_s: float = 0.0
    starved_s: float = 0.0
    first_embedding_s: float | None = None
    writing_s: float = 0.0
    _in_flight: int = 0
    _waiting: int = 0
    _since: float = field(default_factory=time.perf_counter)

    def _tick(self) -> None:
        now = time.perf_counter()
        if self._in_flight:
            self.busy_s += now - self._since
        elif self._waiting == self.embedders:
            # Every embedder waits for a prepared file with texts new to the model: the language
            # server or the reads are behind, or (a clone) the vector cache had every text.
            self.starved_s += now - self._since
        self._since = now

    @contextmanager
    def _count(self, attr: str) -> Iterator[None]:
        self._tick()
        setattr(self, attr, getattr(self, attr) + 1)
        try:
            yield
        finally:
            self._tick()
            setattr(self, attr, getattr(self, attr) - 1)

    def waiting(self) -> AbstractContextManager[None]:
        """An embedder waiting for prepared files."""
        return self._count("_waiting")

    def embedding(self) -> AbstractContextManager[None]:
        """An embedding call in flight."""
        if self.first_embedding_s is None:
            self.first_embedding_s = time.perf_counter() - self.started
        return self._count("_in_flight")

    def summary(self) -> str:
        """One line for the log."""
        self._tick()
        total = time.perf_counter() - self.started
        idle = max(0.0, total - self.busy_s)
        return (
            f"{total:.1f} s; model busy {self.busy_s:.1f} s, idle {idle:.1f} s "
            f"({self.starved_s:.1f} s with every embedder waiting for prepared files, "
            f"first embedding at {self.first_embedding_s or 0.0:.2f} s); writing {self.writing_s:.1f} s"
        )


class FullRun:
    """One full run's stages over `todo`; run() returns the files that changed while being written."""

    def __init__(self, prepare: Prepare, writer: BatchWriter, config: IndexConfig, commit: Commit) -> None:
        self._prepare = prepare
        self._writer = writer
        self._config = config
        self._commit = commit
        self.clock = RunClock(max(1, config.embed_concurrency))

    async def run(self, todo: Iterable[WalkedFile]) -> list[WalkedFile]:
        """Prepare, embed and write every file of `todo`, taken in its order as preparers get free."""
        config = self._config
        prepared_send, prepared_recv = anyio.create_memory_object_stream[Embedded](config.commit_files)
        # As deep as a transaction: files from the preparers come one by one, and a stream only a few
        # deep made a worktree's unchanged files into transactions of a few files each.
        embedded_send, embedded_recv = anyio.create_memory_object_stream[Embedded](config.commit_files)
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._prepare_all, todo, prepared_send, embedded_send.clone())
                tg.start_soon(self._embed_all, prepared_recv, embedded_send)
                try:
                    retry = await self._write_all(embedded_recv)
                except BaseException:
                    # Cancel the other stages before the receiving end closes under them.
                    tg.cancel_scope.cancel()
                    raise
        finally:
            prepared_recv.close()
            embedded_recv.close()
        return retry

    async def _prepare_all(
        self,
        todo: Iterable[WalkedFile],
        send: MemoryObjectSendStream[Embedded],
        ready: MemoryObjectSendStream[Embedded],
    ) -> None:
        """Prepare and look up each file; to the embedders if the model must embed some of it, else to the writer."""
        files = iter(todo)

        async def worker(out: MemoryObjectSendStream[Embedded], direct: MemoryObjectSendStream[Embedded]) -> None:
            async with out, direct:
                for walked in files:  # shared iterator: each file goes to exactly one worker
                    looked = await self._writer.look_up([await self._prepare(walked)])
                    await (out if looked.missing else direct).send(looked)

        async with send, ready, anyio.create_task_group() as tg:
            for _ in range(max(1, self._config.symbol_concurrency)):
                tg.start_soon(worker, send.clone(), ready.clone())

    async def _embed_all(
        self, receive: MemoryObjectReceiveStream[Embedded], send: MemoryObjectSendStream[Embedded]
    ) -> None:
        async with receive, send, anyio.create_task_group() as tg:
            for _ in range(self.clock.embedders):
                tg.start_soon(self._embedder, receive.clone(), send.clone())

    async def _embedder(
        self, receive: MemoryObjectReceiveStream[Embedded], send: MemoryObjectSendStream[Embedded]
    ) -> None:
        async with receive, send:
            while True:
                waited = time.perf_counter()
                with self.clock.waiting():
                    try:
                        first = await receive.receive()
                    except anyio.EndOfStream:
                        return
                waited = time.perf_counter() - waited
                # What is ready, never waiting to fill: at the start that is one file, so the
                # model starts with the server's first answer. Bounded by chunks, not by the texts
                # the model must embed: a worktree's batches then hold a few dozen of those, and
                # the run's last ones are shared by both calls in flight instead of left to one.
                parts, files, size = _take_ready(
                    receive, first, _embedded_size, self._config.commit_files, self._config.embed_batch
                )
                batch = Embedded.merge(parts)
                started = time.perf_counter()
                with self.clock.embedding():
                    embedded = await self._writer.embed_missing(batch)
                log.debug(
                    "embedded %d files (%d chunks, %d texts new to the model) in %.0f ms after waiting %.0f ms"
                    " for prepared files",
                    files, size, len(batch.missing), (time.perf_counter() - started) * 1000, waited * 1000,
                )  # fmt: skip
                await send.send(embedded)

    async def _write_all(self, receive: MemoryObjectReceiveStream[Embedded]) -> list[WalkedFile]:
        retry: list[WalkedFile] = []
        async for first in receive:
            # A transaction is what the embedders have ready, up to commit_files/commit_chunks.
            parts, files, size = _take_ready(
                receive, first, _embedded_size, self._config.commit_files, self._config.commit_chunks
            )
            started = time.perf_counter()
            retry += await self._commit(Embedded.merge(parts))
            took = time.perf_counter() - started
            self.clock.writing_s += took
            log.debug("wrote %d files (%d chunks) in %.0f ms", files, size, took * 1000)
        return retry


def _take_ready(
    receive: MemoryObjectReceiveStream[T],
    first: T,
    size: Callable[[T], tuple[int, int]],
    max_files: int,
    max_chunks: int,
) -> tuple[list[T], int, int]:
    """`first` and what else `receive` has ready, never waiting, until `max_files` or `max_chunks`; with those sizes."""
    taken = [first]
    files, chunks = size(first)
    while files < max_files and chunks < max_chunks:
        try:
            item = receive.receive_nowait()
        except (anyio.WouldBlock, anyio.EndOfStream):
            break
        taken.append(item)
        more_files, more_chunks = size(item)
        files, chunks = files + more_files, chunks + more_chunks
    return taken, files, chunks


def _embedded_size(embedded: Embedded) -> tuple[int, int]:
    return len(embedded.batch), embedded.chunks
