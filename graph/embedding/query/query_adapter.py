"""The query adapter: a low-rank update applied to query vectors only, never to indexed chunks.

A query vector q (L2-normalised, as the model gives it) becomes normalise(q + (q U) V^T),
U and V [dim, rank] fitted on (docstring, chunk) pairs mined from the standard library
and installed packages (bench/search/adapter_pairs.py, adapter_build.py,
graph/embedding/query/adapter_training.py; docs/benchmarks.md, "Query adapter"). The chunk
vectors in every index are untouched, so switching the adapter on or off rebuilds
nothing: the index's model id does not name it; `Embedder.info()` does.

One file per model ships beside this module, `<model>.adapter`: a JSON header line (format, model,
dim, rank, SHA-256 of the rest) then the float32 [2, dim, rank] factors as .npy. The
header is checked before the factors are used, so a damaged file, or one made for
another model or width, is refused with AdapterInvalid and the caller searches with
the plain query vector (`load_for`), never with a wrong one.
"""

from __future__ import annotations

import hashlib
import io
import json
import logging
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

__all__ = [
    "ADAPTER_DIR",
    "FORMAT",
    "AdapterChoice",
    "AdapterInvalid",
    "QueryAdapter",
    "adapter_path",
    "choose",
    "encode",
    "fit_width",
    "load_for",
]

log = logging.getLogger(__name__)

ADAPTER_DIR = Path(__file__).resolve().parent
FORMAT = "lensmux-query-adapter/1"

Vectors = npt.NDArray[np.float32]


class AdapterInvalid(ValueError):
    """An adapter file is unreadable, damaged, or made for another model or width."""


def adapter_path(model: str) -> Path:
    """Where the adapter lensmux ships for `model` lives (it may not exist)."""
    return ADAPTER_DIR / f"{model}.adapter"


def encode(factors: npt.NDArray[np.floating], model: str) -> bytes:
    """The file's bytes for [2, dim, rank] factors: same factors and model, same bytes."""
    array = np.ascontiguousarray(factors, dtype=np.float32)
    if array.ndim != 3 or array.shape[0] != 2:
        raise ValueError(f"adapter factors must be [2, dim, rank], got {array.shape}")
    buffer = io.BytesIO()
    np.save(buffer, array, allow_pickle=False)
    payload = buffer.getvalue()
    header = {
        "format": FORMAT,
        "model": model,
        "dim": int(array.shape[1]),
        "rank": int(array.shape[2]),
        "sha256": hashlib.sha256(payload).hexdigest(),
    }
    return json.dumps(header, sort_keys=True).encode() + b"\n" + payload


@dataclass(frozen=True, slots=True)
class QueryAdapter:
    """U and V of one adapter, the model it was made for, and its name (model, rank, checksum prefix)."""

    name: str
    model: str
    u: Vectors
    v: Vectors

    @classmethod
    def from_factors(cls, factors: npt.NDArray[np.floating], name: str, model: str = "") -> QueryAdapter:
        """An adapter from a [2, dim, rank] array (what the file holds)."""
        array = np.asarray(factors, dtype=np.float32)
        if array.ndim != 3 or array.shape[0] != 2:
            raise ValueError(f"adapter factors must be [2, dim, rank], got {array.shape}")
        return cls(name, model, np.ascontiguousarray(array[0]), np.ascontiguousarray(array[1]))

    @classmethod
    def decode(cls, data: bytes, source: str) -> QueryAdapter:
        """An adapter from a file's bytes; AdapterInvalid says what is wrong with them."""
        head, newline, payload = data.partition(b"\n")
        try:
            header = json.loads(head) if newline else None
        except ValueError:
            header = None
        if not isinstance(header, dict) or header.get("format") != FORMAT:
            raise AdapterInvalid(f"{source} is not a {FORMAT} file")
        digest = hashlib.sha256(payload).hexdigest()
        if digest != header.get("sha256"):
            expected = header.get("sha256")
            raise AdapterInvalid(f"{source} is damaged: its factors hash to {digest[:12]}, header says {expected}")
        try:
            factors = np.load(io.BytesIO(payload), allow_pickle=False)
            adapter = cls.from_factors(factors, f"{header['model']} r{factors.shape[2]} {digest[:12]}", header["model"])
        except (ValueError, KeyError, IndexError, EOFError) as exc:
            raise AdapterInvalid(f"{source}: unreadable factors ({exc})") from exc
        if adapter.dim != header.get("dim") or not np.isfinite(adapter.u).all() or not np.isfinite(adapter.v).all():
            raise AdapterInvalid(f"{source}: factors {factors.shape} do not match the header's dim {header.get('dim')}")
        return adapter

    @classmethod
    def read(cls, path: Path) -> QueryAdapter:
        """`decode` of a file."""
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise AdapterInvalid(f"cannot read the query adapter {path}: {exc}") from exc
        return cls.decode(data, str(path))

    @property
    def dim(self) -> int:
        """Width of the vectors it maps."""
        return int(self.u.shape[0])

    def apply(self, vectors: Vectors) -> Vectors:
        """Adapted and re-normalised query vectors: [dim] or [n, dim], float32."""
        moved = vectors + (vectors @ self.u) @ self.v.T
        norm = np.linalg.norm(moved, axis=-1, keepdims=True)
        out: Vectors = (moved / np.maximum(norm, np.float32(1e-12))).astype(np.float32, copy=False)
        return out


@dataclass(frozen=True, slots=True)
class AdapterChoice:
    """The adapter to apply (None: plain query vectors) and why, in words `lensmux status` shows."""

    adapter: QueryAdapter | None
    state: str


def load_for(model: str, dim: int | None, path: Path | None = None) -> AdapterChoice:
    """The adapter for `model` vectors `dim` wide, from `path` (default: the shipped file).

    Anything wrong with the file (unreadable, damaged, another model, another width) is
    logged as an error and gives no adapter: search goes on with plain query vectors.
    A model lensmux ships no adapter for gets none, without an error.
    """
    if path is None:
        path = adapter_path(model)
        if not path.exists():
            # Not an error: lensmux ships adapters for some models only.
            log.info("no query adapter ships for %s; queries are embedded without one", model)
            return AdapterChoice(None, f"none ships for {model}")
    try:
        adapter = QueryAdapter.read(path)
    except AdapterInvalid as exc:
        why = str(exc)
    else:
        if adapter.model != model:
            why = f"{path} was made for the model {adapter.model!r}, not {model!r}"
        elif dim is not None and adapter.dim != dim:
            why = f"{path} maps {adapter.dim}-wide vectors, the model gives {dim}"
        else:
            return AdapterChoice(adapter, adapter.name)
    log.error("query adapter not used, queries are embedded without it: %s", why)
    return AdapterChoice(None, f"not used: {why}")


def choose(asked: bool | QueryAdapter | AdapterChoice | None, model: str) -> AdapterChoice:
    """What an Embedder of `model` applies: the shipped adapter for True, the one given, or none."""
    if isinstance(asked, AdapterChoice):
        return asked
    if isinstance(asked, QueryAdapter):
        return AdapterChoice(asked, asked.name)
    return load_for(model, None) if asked else AdapterChoice(None, "off")


def fit_width(choice: AdapterChoice, dim: int) -> AdapterChoice:
    """`choice` if its adapter maps `dim`-wide vectors; else none, logged (the model stays usable)."""
    adapter = choice.adapter
    if adapter is None or adapter.dim == dim:
        return choice
    why = f"query adapter {adapter.name} maps {adapter.dim}-wide vectors, the model gives {dim}"
    log.error("query adapter not used, queries are embedded without it: %s", why)
    return AdapterChoice(None, f"not used: {why}")
