"""Embedder: texts in, L2-normalised float32 sentence vectors out.

Texts are tokenised once, ordered longest first and cut into batches whose padded size
stays within a token budget, so short texts are never padded to a long neighbour;
results go back in the caller's order. A text's padded width depends on its own length
only (rounded up to ``PAD_MULTIPLE``, inference/batching.py) and a batch holds texts of one width: onnxruntime's
kernels sum a row in a different order when its padding differs, and the index needs
the same text to give bit-identical vectors whatever else is embedded with it.
One onnxruntime session serves every caller: ``InferenceSession.run`` is thread-safe and
nothing else here is mutated after construction, so ``embed`` may run in several ``anyio.to_thread`` workers at once.
Each run uses one thread; a call spreads its runs over ``threads`` threads, and at most
``threads`` runs execute at once over all callers, so concurrent calls never oversubscribe the cores.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import anyio.to_thread
import msgspec
import numpy as np
import numpy.typing as npt
import onnxruntime as ort

from lensmux.graph.embedding.inference.batching import DEFAULT_TOKEN_BUDGET, padded_widths, plan_batches
from lensmux.graph.embedding.inference.runtime import (
    PROVIDERS,
    SessionIO,
    available_cores,
    l2_normalise,
    open_session,
    pool,
    run_session,
)
from lensmux.graph.embedding.inference.token_memo import TokenMemo
from lensmux.graph.embedding.inference.tokenizer import TextTokenizer
from lensmux.graph.embedding.model.cache import Manifest
from lensmux.graph.embedding.model.store import CachedModel, Precision, ProgressCallback, ensure_model
from lensmux.graph.embedding.model.weights import DEFAULT_MODEL_NAME
from lensmux.graph.embedding.query.query_adapter import AdapterChoice, QueryAdapter, choose, fit_width
from lensmux.graph.embedding.spec import ModelCorrupt, ModelSpec, ModelSpecInvalid, read_model_spec

log = logging.getLogger(__name__)

Vectors = npt.NDArray[np.float32]


class EmbedderInfo(msgspec.Struct, frozen=True, kw_only=True):
    """What an open Embedder runs, for ``lensmux model info`` and logs."""

    name: str
    dim: int
    max_tokens: int
    model_dir: str
    output: str
    pooling: str
    normalize: bool
    threads: int
    token_budget: int
    providers: list[str]
    precision: str | None = None
    manifest: Manifest | None = None
    # The adapter applied to query vectors (model, rank, checksum prefix), None when none is.
    query_adapter: str | None = None
    # "off" (not asked for), the adapter's name, or "not used: <why>" (asked for, file refused).
    query_adapter_state: str = "off"


@dataclass(frozen=True)
class _Loaded:
    session: ort.InferenceSession
    io: SessionIO
    tokenizer: TextTokenizer


class Embedder:
    """Sentence embeddings from one ONNX model; safe to share between threads."""

    def __init__(
        self,
        *,
        model: bytes,
        tokenizer_json: str,
        spec: ModelSpec,
        model_dir: Path,
        threads: int | None = None,
        token_budget: int | None = None,
        precision: str | None = None,
        manifest: Manifest | None = None,
        reload: Callable[[], tuple[bytes, str]] | None = None,
        query_adapter: QueryAdapter | AdapterChoice | None = None,
    ) -> None:
        if token_budget is None:
            # A model with a wider window than the default budget gets one text per run.
            token_budget = max(DEFAULT_TOKEN_BUDGET, spec.max_tokens)
        elif token_budget < spec.max_tokens:
            raise ValueError(f"token_budget {token_budget} is below one full text ({spec.max_tokens})")
        # Runs in flight at once, over every caller; each run is one thread (open_session).
        self._threads = threads or available_cores()
        self._runs = threading.BoundedSemaphore(self._threads)
        self._spec = spec
        self._model_dir = model_dir
        self._token_budget = token_budget
        self._precision = precision
        self._manifest = manifest
        # `reload` gives the model files again after `release`; without it the model stays loaded.
        self._reload = reload
        self._load_lock = threading.Lock()
        # Counts outlive a release of the model: a later root with the same texts needs neither.
        self.token_memo = TokenMemo()
        self._in_use = 0
        self._last_used = time.monotonic()
        self._loaded: _Loaded | None = self._build(model, tokenizer_json)
        # One real run settles the width and proves the model works before anyone relies on it.
        self._dim = int(self._run(["dimension probe"]).shape[1])
        assert self._loaded is not None
        self._output = self._loaded.io.output
        if spec.dim is not None and spec.dim != self._dim:
            raise ModelSpecInvalid(f"{model_dir}: spec says dim {spec.dim}, model returns {self._dim}")
        # A wrong adapter never costs the model: fit_width logs it and leaves queries plain.
        self._adapter = fit_width(choose(query_adapter, spec.name), self._dim)
        log.info("embedding model %s ready: dim %d, %d threads", spec.name, self._dim, self._threads)

    @classmethod
    def open_default(
        cls,
        precision: Precision = "int8",
        *,
        threads: int | None = None,
        token_budget: int | None = None,
        cache_root: Path | None = None,
        progress: ProgressCallback | None = None,
        model: str = DEFAULT_MODEL_NAME,
        query_adapter: bool | QueryAdapter = False,
    ) -> Embedder:
        """A packaged model (all-MiniLM-L6-v2 unless ``model`` names another), built into the cache on first use.

        ``query_adapter`` True applies the adapter lensmux ships for that model to query
        vectors (query_adapter.py), or give one. A missing, damaged or mismatched file is
        logged and leaves queries plain (``info().query_adapter_state`` says why).
        """
        adapter = choose(query_adapter, model)
        cached = ensure_model(precision, cache_root=cache_root, progress=progress, model=model)
        try:
            return cls._from_cache(
                cached, precision, threads, token_budget, cache_root=cache_root, model=model, adapter=adapter
            )
        except ModelCorrupt as exc:
            # The files match their checksums yet do not load: rebuild once, then give up.
            log.warning("cached model does not load, rebuilding it: %s", exc)
            cached = ensure_model(precision, cache_root=cache_root, progress=progress, force=True, model=model)
            return cls._from_cache(
                cached, precision, threads, token_budget, cache_root=cache_root, model=model, adapter=adapter
            )

    @classmethod
    def _from_cache(
        cls,
        cached: CachedModel,
        precision: Precision,
        threads: int | None,
        token_budget: int | None,
        *,
        cache_root: Path | None = None,
        model: str = DEFAULT_MODEL_NAME,
        adapter: AdapterChoice | None = None,
    ) -> Embedder:
        def reload() -> tuple[bytes, str]:
            again = ensure_model(precision, cache_root=cache_root, model=model)
            return again.model_bytes, again.tokenizer_json

        return cls(
            model=cached.model_bytes,
            tokenizer_json=cached.tokenizer_json,
            spec=cached.spec,
            model_dir=cached.directory,
            threads=threads,
            token_budget=token_budget,
            precision=precision,
            manifest=cached.entry.manifest,
            reload=reload,
            query_adapter=adapter,
        )

    @classmethod
    def open_directory(
        cls,
        directory: Path,
        *,
        spec: ModelSpec | None = None,
        threads: int | None = None,
        token_budget: int | None = None,
    ) -> Embedder:
        """A user-supplied model directory (model.onnx + tokenizer.json + pooling settings)."""
        spec = spec or read_model_spec(directory)
        try:
            model = (directory / spec.model_file).read_bytes()
            tokenizer_json = (directory / spec.tokenizer_file).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ModelCorrupt(f"cannot read the model in {directory}: {exc}") from exc
        return cls(
            model=model,
            tokenizer_json=tokenizer_json,
            spec=spec,
            model_dir=directory,
            threads=threads,
            token_budget=token_budget,
        )

    @property
    def dim(self) -> int:
        """Width of every embedding."""
        return self._dim

    @property
    def max_tokens(self) -> int:
        """Texts are truncated to this many tokens, [CLS] and [SEP] included."""
        return self._spec.max_tokens

    def embed(self, texts: Sequence[str]) -> Vectors:
        """Embeddings of ``texts`` in their order, float32 [len(texts), dim]."""
        if isinstance(texts, str):
            raise TypeError("embed() takes a sequence of texts; use embed_query() for one text")
        if not texts:
            return np.zeros((0, self._dim), dtype=np.float32)
        prefix = self._spec.passage_prefix
        return self._run([prefix + text for text in texts] if prefix else texts)

    def embed_query(self, text: str) -> Vectors:
        """Embedding of one query, float32 [dim]: the model's query prefix and the query adapter, where there are."""
        vector: Vectors = self._run([self._spec.query_prefix + text])[0]
        adapter = self._adapter.adapter
        return vector if adapter is None else adapter.apply(vector)

    def embed_queries(self, texts: Sequence[str]) -> Vectors:
        """``embed_query`` for many queries at once, float32 [len(texts), dim], bit-identical to one by one."""
        if isinstance(texts, str):
            raise TypeError("embed_queries() takes a sequence of texts; use embed_query() for one text")
        if not texts:
            return np.zeros((0, self._dim), dtype=np.float32)
        vectors = self._run([self._spec.query_prefix + text for text in texts])
        adapter = self._adapter.adapter
        # Row by row, as embed_query does: a matrix product may sum in another order than a vector product.
        return vectors if adapter is None else np.stack([adapter.apply(row) for row in vectors])

    async def embed_async(self, texts: Sequence[str]) -> Vectors:
        """``embed`` in a worker thread, keeping the event loop free."""
        return await anyio.to_thread.run_sync(self.embed, texts)

    def count_tokens(self, text: str) -> int:
        """Model tokens in ``text`` (no special tokens, no truncation), for context budgets."""
        return self.count_tokens_batch([text])[0]

    def count_tokens_batch(self, texts: Sequence[str]) -> list[int]:
        """``count_tokens`` for many texts at once; texts counted before are not tokenised again."""
        return self.token_memo.counts(texts, self._count_tokens)

    def _count_tokens(self, texts: Sequence[str]) -> list[int]:
        with self._using() as loaded:
            return loaded.tokenizer.count_tokens_batch(texts)

    @property
    def loaded(self) -> bool:
        """Whether the session and tokenizer are in memory."""
        return self._loaded is not None

    def idle_seconds(self) -> float:
        """Seconds since the model was last used (0 while in use)."""
        return 0.0 if self._in_use else time.monotonic() - self._last_used

    def release_if_idle(self, idle_seconds: float) -> bool:
        """Drop the session and tokenizer if unused for `idle_seconds`; the next use loads them again."""
        with self._load_lock:
            if self._loaded is None or self._reload is None or self._in_use:
                return False
            if time.monotonic() - self._last_used < idle_seconds:
                return False
            self._loaded = None
        log.info("embedding model %s released after %.0fs unused", self._spec.name, idle_seconds)
        return True

    def _build(self, model: bytes, tokenizer_json: str) -> _Loaded:
        spec, model_dir = self._spec, self._model_dir
        session = open_session(model, threads=1, origin=str(model_dir))
        return _Loaded(
            session=session,
            io=SessionIO.inspect(session, spec.output, str(model_dir)),
            tokenizer=TextTokenizer(
                tokenizer_json, max_tokens=spec.max_tokens, origin=str(model_dir / spec.tokenizer_file)
            ),
        )

    @contextmanager
    def _using(self) -> Iterator[_Loaded]:
        """The loaded model, loading it again if it was released; never released while in use."""
        with self._load_lock:
            loaded = self._loaded
            if loaded is None:
                assert self._reload is not None
                model, tokenizer_json = self._reload()
                loaded = self._loaded = self._build(model, tokenizer_json)
                log.info("embedding model %s loaded again", self._spec.name)
            self._in_use += 1
        try:
            yield loaded
        finally:
            with self._load_lock:
                self._in_use -= 1
                self._last_used = time.monotonic()

    def info(self) -> EmbedderInfo:
        """Describe the loaded model and run settings."""
        return EmbedderInfo(
            name=self._spec.name,
            dim=self._dim,
            max_tokens=self._spec.max_tokens,
            model_dir=str(self._model_dir),
            output=self._output,
            pooling=self._spec.pooling,
            normalize=self._spec.normalize,
            threads=self._threads,
            token_budget=self._token_budget,
            providers=list(PROVIDERS),
            precision=self._precision,
            manifest=self._manifest,
            query_adapter=self._adapter.adapter.name if self._adapter.adapter is not None else None,
            query_adapter_state=self._adapter.state,
        )

    def _run(self, texts: Sequence[str]) -> Vectors:
        with self._using() as loaded:
            return self._run_loaded(loaded, texts)

    def _run_loaded(self, loaded: _Loaded, texts: Sequence[str]) -> Vectors:
        ids = loaded.tokenizer.encode(texts)
        lengths = np.fromiter((len(row) for row in ids), dtype=np.int64, count=len(ids))
        widths = padded_widths(lengths, self._spec.max_tokens)
        order = np.argsort(-widths, kind="stable")
        batches = plan_batches(widths[order].tolist(), self._token_budget)

        def run(positions: range, last: bool) -> tuple[npt.NDArray[np.intp], Vectors]:
            rows = order[positions.start : positions.stop]
            batch = loaded.tokenizer.pad([ids[r] for r in rows], int(widths[rows[0]]))
            with self._runs:
                output = run_session(loaded.session, loaded.io, batch, last=last)
            vectors = pool(output, batch.attention_mask, self._spec.pooling)
            return rows, l2_normalise(vectors) if self._spec.normalize else vectors

        # Runs, not operators, are spread over the cores: one-thread runs side by side keep
        # every core busy, where one run's operators split over the cores left a third of
        # the time idle between them (docs/benchmarks.md, "Where the indexing pipeline idled").
        # The last run shrinks the arena, so it goes once the others are done.
        head = batches[:-1]
        workers = min(self._threads, len(head))
        if workers > 1:
            with ThreadPoolExecutor(workers, thread_name_prefix="lensmux-embed") as executor:
                parts = list(executor.map(lambda positions: run(positions, False), head))
        else:
            parts = [run(positions, False) for positions in head]
        parts.append(run(batches[-1], True))
        result = np.empty((len(texts), parts[0][1].shape[1]), dtype=np.float32)
        for rows, vectors in parts:
            result[rows] = vectors
        return result
