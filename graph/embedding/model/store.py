"""A packaged model's life cycle: build on first need, cache, verify, rebuild when damaged.

Every function takes the model's name (models.py; the default all-MiniLM-L6-v2); each
model has cache entries of its own, keyed by its name and the hashes of its sources.

``ensure_model`` is what the embedder calls; ``build_model`` and ``model_info`` back the
``lensmux model build`` and ``lensmux model info`` commands and return plain data.
Progress is reported as ``progress(stage, fraction)`` where ``fraction`` is the share of
the whole job done so far (0.0 to 1.0, never decreasing) and ``stage`` is one of
``hash-sources``, ``wait-for-lock``, ``load-weights``, ``build-graph``, ``quantize``,
``self-test``, ``write-cache``, ``ready``.
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

import msgspec
import onnx
import onnxruntime

from lensmux.graph.embedding.inference.tokenizer import TextTokenizer
from lensmux.graph.embedding.model import cache
from lensmux.graph.embedding.model.cache import Manifest, VerifiedEntry
from lensmux.graph.embedding.model.models import PackagedModel, packaged_model
from lensmux.graph.embedding.model.onnx_builder import BUILDER_VERSION, OUTPUT, build_encoder
from lensmux.graph.embedding.model.quantize import (
    QUANTIZATION,
    check_agreement,
    mean_cosine,
    probe,
    quantize_int8,
)
from lensmux.graph.embedding.model.weights import DEFAULT_MODEL_NAME
from lensmux.graph.embedding.spec import (
    DEFAULT_MAX_TOKENS,
    SPEC_FILE,
    CacheUnavailable,
    EmbeddingError,
    ModelBuildFailed,
    ModelCorrupt,
    ModelSpec,
    decode_spec,
    encode_spec,
)

log = logging.getLogger(__name__)

Precision = Literal["int8", "fp32"]
ProgressCallback = Callable[[str, float], None]
ModelStatus = Literal["ready", "missing", "corrupt", "not-installed"]
MODEL_FILE = "model.onnx"
TOKENIZER_FILE = "tokenizer.json"


class ModelInfo(msgspec.Struct, frozen=True, kw_only=True):
    """What ``lensmux model info`` shows about a model."""

    name: str
    precision: str
    status: ModelStatus
    cache_dir: str | None = None
    source_dir: str | None = None
    detail: str = ""
    manifest: Manifest | None = None


@dataclass(frozen=True)
class CachedModel:
    """A verified cache entry of a model, ready to load."""

    entry: VerifiedEntry
    spec: ModelSpec

    @property
    def directory(self) -> Path:
        """The cache entry's directory."""
        return self.entry.directory

    @property
    def model_bytes(self) -> bytes:
        """The serialized ONNX model, exactly as checksummed."""
        return self.entry.contents[MODEL_FILE]

    @property
    def tokenizer_json(self) -> str:
        """The tokenizer.json text, exactly as checksummed."""
        return self.entry.contents[TOKENIZER_FILE].decode("utf-8")


@dataclass(frozen=True)
class _Source:
    model: PackagedModel
    directory: Path
    sha256: dict[str, str]
    entry: str


def _no_progress(_stage: str, _fraction: float) -> None:
    return None


def _identify(precision: Precision, progress: ProgressCallback, name: str = DEFAULT_MODEL_NAME) -> _Source:
    """Locate the packaged files and derive the cache entry name from their contents."""
    model = packaged_model(name)
    directory = model.locate()
    progress("hash-sources", 0.0)
    try:
        hashes = {role: cache.sha256_file(path) for role, path in model.sources(directory).items()}
    except OSError as exc:
        raise ModelCorrupt(f"cannot read the packaged model in {directory}: {exc}") from exc
    recipe = {
        "builder": BUILDER_VERSION,
        "precision": precision,
        "quantization": QUANTIZATION if precision == "int8" else {},
        "sources": hashes,
    }
    short = hashlib.sha256(msgspec.json.encode(recipe)).hexdigest()[:12]
    progress("hash-sources", 0.02)
    return _Source(model=model, directory=directory, sha256=hashes, entry=f"{name}-{short}")


def _check(entry: VerifiedEntry, source: _Source, precision: Precision) -> CachedModel:
    """Confirm a checksummed entry was built from ``source`` by this builder."""
    m = entry.manifest
    if (m.builder_version, m.precision, m.source_sha256) != (
        BUILDER_VERSION,
        precision,
        source.sha256,
    ):
        raise ModelCorrupt(f"{entry.directory} was built from other sources or by another builder")
    missing = {MODEL_FILE, TOKENIZER_FILE, SPEC_FILE} - set(entry.contents)
    if missing:
        raise ModelCorrupt(f"{entry.directory} lacks {', '.join(sorted(missing))}")
    spec = decode_spec(entry.contents[SPEC_FILE], origin=str(entry.directory / SPEC_FILE))
    return CachedModel(entry=entry, spec=spec)


def _load_if_sound(final: Path, source: _Source, precision: Precision) -> CachedModel | None:
    """The cached model, or ``None`` when it is absent or damaged (then it gets rebuilt)."""
    try:
        entry = cache.load_verified(final)
        return None if entry is None else _check(entry, source, precision)
    except EmbeddingError as exc:
        log.warning("model cache entry is unusable, rebuilding it: %s", exc)
        return None


def ensure_model(
    precision: Precision = "int8",
    *,
    cache_root: Path | None = None,
    progress: ProgressCallback | None = None,
    force: bool = False,
    model: str = DEFAULT_MODEL_NAME,
) -> CachedModel:
    """The verified cached model, building (or rebuilding) it first if needed."""
    report = progress or _no_progress
    root = cache_root or cache.default_cache_root()
    source = _identify(precision, report, model)
    final = root / source.entry
    if not force and (found := _load_if_sound(final, source, precision)) is not None:
        report("ready", 1.0)
        return found
    with cache.entry_lock(root, source.entry, on_wait=lambda: report("wait-for-lock", 0.02)):
        # Whoever held the lock before us may have just built the same entry.
        if not force and (found := _load_if_sound(final, source, precision)) is not None:
            report("ready", 1.0)
            return found
        cache.remove_leftovers(root, source.entry)
        with cache.staging_dir(root, source.entry) as staged:
            _build_into(staged, source, precision, report)
            cache.publish(staged, final)
        entry = cache.load_verified(final)
        if entry is None:
            raise CacheUnavailable(f"{final} vanished right after it was written")
        built = _check(entry, source, precision)
    report("ready", 1.0)
    return built


def _build_into(staged: Path, source: _Source, precision: Precision, report: ProgressCallback) -> None:
    """Write a complete cache entry (manifest last) into the staging directory."""
    started = time.monotonic()
    report("load-weights", 0.03)
    name = source.model.name
    weights, tokenizer_bytes = source.model.read(source.directory)
    try:
        tokenizer_text = tokenizer_bytes.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ModelBuildFailed(f"the tokenizer of {name} is not UTF-8: {exc}") from exc
    tokenizer = TextTokenizer(tokenizer_text, max_tokens=DEFAULT_MAX_TOKENS)
    metadata = {
        "lensmux.builder_version": BUILDER_VERSION,
        **{f"lensmux.source_sha256.{role}": digest for role, digest in source.sha256.items()},
    }
    model = build_encoder(weights, metadata=metadata, progress=lambda f: report("build-graph", 0.05 + 0.2 * f))
    fp32_path = staged / "encoder-fp32.onnx"
    try:
        onnx.save_model(model, fp32_path)
    except (OSError, ValueError) as exc:
        raise CacheUnavailable(f"cannot write {fp32_path}: {exc}") from exc
    del model
    label = f"{name} {precision} model"
    fp32_vectors = probe(fp32_path.read_bytes(), tokenizer, f"{name} fp32 model")
    cosine: float | None = None
    if precision == "int8":
        report("quantize", 0.3)
        fp32_path.unlink()
        quantize_int8(weights, staged / MODEL_FILE, metadata)
        report("self-test", 0.8)
        cosine = mean_cosine(fp32_vectors, probe((staged / MODEL_FILE).read_bytes(), tokenizer, label))
        check_agreement(cosine)
    else:
        fp32_path.rename(staged / MODEL_FILE)
    report("write-cache", 0.9)
    hidden = weights.config.hidden_size
    spec = ModelSpec(
        name=name,
        output=OUTPUT,
        pooling="mean",
        normalize=True,
        max_tokens=DEFAULT_MAX_TOKENS,
        dim=hidden,
        query_prefix=source.model.query_prefix,
        passage_prefix=source.model.passage_prefix,
    )
    try:
        (staged / TOKENIZER_FILE).write_bytes(tokenizer_bytes)
        (staged / SPEC_FILE).write_bytes(encode_spec(spec))
        manifest = Manifest(
            name=name,
            precision=precision,
            dim=hidden,
            builder_version=BUILDER_VERSION,
            source_dir=str(source.directory),
            source_sha256=source.sha256,
            files=cache.checksum_entries(staged, [MODEL_FILE, TOKENIZER_FILE, SPEC_FILE]),
            built_at=datetime.now(UTC).isoformat(timespec="seconds"),
            build_seconds=round(time.monotonic() - started, 2),
            tools={"onnx": onnx.__version__, "onnxruntime": onnxruntime.__version__},
            quantization=QUANTIZATION if precision == "int8" else {},
            int8_cosine_vs_fp32=None if cosine is None else round(cosine, 5),
        )
        (staged / cache.MANIFEST_FILE).write_bytes(cache.encode_manifest(manifest))
    except OSError as exc:
        raise CacheUnavailable(f"cannot write the model cache entry in {staged}: {exc}") from exc
    log.info("built %s in %.1f s", label, manifest.build_seconds)


def build_model(
    precision: Precision = "int8",
    *,
    force: bool = False,
    cache_root: Path | None = None,
    progress: ProgressCallback | None = None,
    model: str = DEFAULT_MODEL_NAME,
) -> ModelInfo:
    """``lensmux model build``: make sure the model is built (rebuild with ``force``)."""
    built = ensure_model(precision, cache_root=cache_root, progress=progress, force=force, model=model)
    return ModelInfo(
        name=built.spec.name,
        precision=precision,
        status="ready",
        cache_dir=str(built.directory),
        source_dir=built.entry.manifest.source_dir,
        manifest=built.entry.manifest,
    )


def model_info(
    precision: Precision = "int8", *, cache_root: Path | None = None, model: str = DEFAULT_MODEL_NAME
) -> ModelInfo:
    """``lensmux model info``: where the model is and whether it is built; never builds."""
    try:
        source = _identify(precision, _no_progress, model)
    except EmbeddingError as exc:
        return ModelInfo(name=model, precision=precision, status="not-installed", detail=str(exc))
    final = (cache_root or cache.default_cache_root()) / source.entry

    def info(status: ModelStatus, detail: str = "", manifest: Manifest | None = None) -> ModelInfo:
        return ModelInfo(
            name=model,
            precision=precision,
            status=status,
            cache_dir=str(final),
            source_dir=str(source.directory),
            detail=detail,
            manifest=manifest,
        )

    try:
        entry = cache.load_verified(final)
        if entry is None:
            return info("missing", "not built yet")
        built = _check(entry, source, precision)
    except EmbeddingError as exc:
        return info("corrupt", str(exc))
    return info("ready", manifest=built.entry.manifest)
