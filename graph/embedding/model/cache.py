"""On-disk model cache: location, manifest, checksums, build lock and atomic publication.

A cache entry is one directory ``<root>/<name>-<short hash>/`` holding ``model.onnx``,
``tokenizer.json``, ``lensmux-model.json`` and, written last, ``manifest.json`` with the
sha256 of every other file. An entry is built in a hidden temporary sibling and renamed
into place, so readers see either no entry or a complete one; builders serialise on an
flock'd ``.<entry>.lock`` file next to it.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import logging
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import msgspec

from lensmux.graph.embedding.spec import CacheUnavailable, ModelCorrupt

log = logging.getLogger(__name__)

MANIFEST_FILE = "manifest.json"
MANIFEST_FORMAT = 1
_TMP_PREFIX = ".tmp-"
_TRASH_PREFIX = ".trash-"
_CHUNK = 1 << 20


class FileEntry(msgspec.Struct, frozen=True):
    """Checksum and size of one file of a cache entry."""

    sha256: str
    size: int


class Manifest(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """What a cache entry holds and what it was built from."""

    format: int = MANIFEST_FORMAT
    name: str
    precision: str
    dim: int
    builder_version: str
    source_dir: str
    source_sha256: dict[str, str]
    files: dict[str, FileEntry]
    built_at: str
    build_seconds: float
    tools: dict[str, str] = {}
    quantization: dict[str, str] = {}
    int8_cosine_vs_fp32: float | None = None


@dataclass(frozen=True)
class VerifiedEntry:
    """A cache entry whose files matched its manifest, with their bytes as checked."""

    directory: Path
    manifest: Manifest
    contents: dict[str, bytes]


def default_cache_root() -> Path:
    """``$XDG_CACHE_HOME/lensmux/models``, or ``~/.cache/lensmux/models``."""
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    # The XDG spec says relative values are invalid and must be ignored.
    base = Path(xdg) if xdg and os.path.isabs(xdg) else Path.home() / ".cache"
    return base / "lensmux" / "models"


def sha256_bytes(data: bytes) -> str:
    """Hex sha256 of ``data``."""
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: Path) -> str:
    """Hex sha256 of a file's contents, read in chunks."""
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def encode_manifest(manifest: Manifest) -> bytes:
    """The manifest as indented JSON."""
    return msgspec.json.format(msgspec.json.encode(manifest), indent=2) + b"\n"


def read_manifest(directory: Path) -> Manifest:
    """Parse ``manifest.json`` of a cache entry; unreadable or malformed is ``ModelCorrupt``."""
    path = directory / MANIFEST_FILE
    try:
        return msgspec.json.decode(path.read_bytes(), type=Manifest)
    except FileNotFoundError as exc:
        raise ModelCorrupt(f"{directory} has no {MANIFEST_FILE}") from exc
    except (OSError, msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise ModelCorrupt(f"cannot read {path}: {exc}") from exc


def load_verified(directory: Path) -> VerifiedEntry | None:
    """Read and check a cache entry: ``None`` if absent, ``ModelCorrupt`` if damaged."""
    if not directory.exists():
        return None
    manifest = read_manifest(directory)
    contents: dict[str, bytes] = {}
    for name, entry in manifest.files.items():
        if os.sep in name or name.startswith("."):
            raise ModelCorrupt(f"{directory}/{MANIFEST_FILE} names a bad file {name!r}")
        try:
            data = (directory / name).read_bytes()
        except OSError as exc:
            raise ModelCorrupt(f"cannot read {directory / name}: {exc}") from exc
        if len(data) != entry.size or sha256_bytes(data) != entry.sha256:
            raise ModelCorrupt(f"{directory / name} does not match its checksum in the manifest")
        contents[name] = data
    return VerifiedEntry(directory=directory, manifest=manifest, contents=contents)


def checksum_entries(directory: Path, names: list[str]) -> dict[str, FileEntry]:
    """Manifest entries for files already written into ``directory``."""
    return {
        name: FileEntry(sha256=sha256_file(directory / name), size=(directory / name).stat().st_size) for name in names
    }


def ensure_root(root: Path) -> Path:
    """Create the cache root (private to the user) if needed."""
    try:
        root.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError as exc:
        raise CacheUnavailable(f"cannot create model cache {root}: {exc}") from exc
    return root


@contextlib.contextmanager
def entry_lock(root: Path, entry: str, *, on_wait: Callable[[], None] | None = None) -> Iterator[None]:
    """Hold the exclusive build lock of one cache entry, waiting while another process builds.

    ``on_wait`` is called once if the lock is busy, before blocking on it.
    """
    path = ensure_root(root) / f".{entry}.lock"
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    except OSError as exc:
        raise CacheUnavailable(f"cannot open lock file {path}: {exc}") from exc
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            log.info("another process is building %s; waiting for it", entry)
            if on_wait is not None:
                on_wait()
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        # Closing the descriptor releases the flock; the lock file itself stays so that
        # two processes never lock two different inodes of the same name.
        os.close(fd)


@contextlib.contextmanager
def staging_dir(root: Path, entry: str) -> Iterator[Path]:
    """A fresh hidden directory next to the entry, removed unless it was published."""
    try:
        path = Path(tempfile.mkdtemp(prefix=f"{_TMP_PREFIX}{entry}-", dir=ensure_root(root)))
    except OSError as exc:
        raise CacheUnavailable(f"cannot create a build directory in {root}: {exc}") from exc
    try:
        yield path
    finally:
        if path.exists():
            shutil.rmtree(path, ignore_errors=True)


def remove_leftovers(root: Path, entry: str) -> None:
    """Delete staging and trash directories left by builders that died; call under the lock."""
    for prefix in (_TMP_PREFIX, _TRASH_PREFIX):
        for leftover in root.glob(f"{prefix}{entry}-*"):
            log.info("removing leftover model build directory %s", leftover)
            shutil.rmtree(leftover, ignore_errors=True)


def fsync_path(path: Path) -> None:
    """fsync a file or directory by path."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def publish(staged: Path, final: Path) -> None:
    """Move a fully written staging directory to ``final``, replacing any old entry."""
    try:
        for child in staged.iterdir():
            fsync_path(child)
        fsync_path(staged)
        trash: Path | None = None
        if final.exists():
            # rename(2) cannot replace a non-empty directory, so the old entry steps aside.
            trash = Path(tempfile.mkdtemp(prefix=f"{_TRASH_PREFIX}{final.name}-", dir=final.parent))
            os.replace(final, trash / final.name)
        os.replace(staged, final)
        fsync_path(final.parent)
    except OSError as exc:
        raise CacheUnavailable(f"cannot publish model cache entry {final}: {exc}") from exc
    if trash is not None:
        shutil.rmtree(trash, ignore_errors=True)
