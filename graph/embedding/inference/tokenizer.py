"""WordPiece tokenisation for the encoder, with lensmux's own truncation and padding.

The packaged tokenizer.json pads and truncates every text to a fixed 128 tokens; lensmux
truncates at the model window (256 by default) and pads each batch only to its longest
member, which is what makes sorting texts by length before batching pay off.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt
from tokenizers import Encoding, Tokenizer

from lensmux.graph.embedding.spec import ModelCorrupt

log = logging.getLogger(__name__)

IdArray = npt.NDArray[np.int64]


@dataclass(frozen=True)
class TokenBatch:
    """Padded model inputs for one batch: [batch, longest] ids and mask."""

    input_ids: IdArray
    attention_mask: IdArray

    @property
    def tokens(self) -> int:
        """Padded size of the batch in tokens (what the encoder pays for)."""
        return int(self.input_ids.size)


def _load(tokenizer_json: str, origin: str) -> Tokenizer:
    try:
        return Tokenizer.from_str(tokenizer_json)
    except Exception as exc:
        # tokenizers reports a malformed file as a plain Exception.
        raise ModelCorrupt(f"cannot load tokenizer {origin}: {exc}") from exc


class TextTokenizer:
    """Turns texts into encoder inputs; safe to share between threads."""

    def __init__(self, tokenizer_json: str, *, max_tokens: int, origin: str = "tokenizer.json"):
        # Two instances because truncation is tokenizer state: mutating it per call would
        # race between threads, and counting must see the whole text.
        self._window = _load(tokenizer_json, origin)
        self._window.no_padding()
        self._window.enable_truncation(max_length=max_tokens)
        self._counter = _load(tokenizer_json, origin)
        self._counter.no_padding()
        self._counter.no_truncation()
        self.max_tokens = max_tokens
        self.pad_id = self._find_pad_id(self._window)

    @classmethod
    def from_file(cls, path: Path, *, max_tokens: int) -> TextTokenizer:
        """Load a Hugging Face tokenizer.json."""
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ModelCorrupt(f"cannot read tokenizer {path}: {exc}") from exc
        return cls(text, max_tokens=max_tokens, origin=str(path))

    @staticmethod
    def _find_pad_id(tokenizer: Tokenizer) -> int:
        padding = tokenizer.padding
        if padding is not None and isinstance(padding.get("pad_id"), int):
            return int(padding["pad_id"])
        for token in ("[PAD]", "<pad>"):
            found = tokenizer.token_to_id(token)
            if found is not None:
                return found
        log.debug("tokenizer has no pad token; padding with id 0 (masked out anyway)")
        return 0

    def encode(self, texts: Sequence[str]) -> list[IdArray]:
        """Token ids per text, special tokens included, truncated to the model window."""
        if not texts:
            return []
        encodings = _encode_batch(self._window, texts, add_special_tokens=True)
        return [np.asarray(e.ids, dtype=np.int64) for e in encodings]

    def pad(self, ids: Sequence[IdArray], width: int | None = None) -> TokenBatch:
        """Right-pad ``ids`` to ``width`` (default: the longest of them)."""
        longest = max((len(row) for row in ids), default=0)
        if width is not None:
            if width < longest:
                raise ValueError(f"cannot pad {longest} tokens to a width of {width}")
            longest = width
        input_ids = np.full((len(ids), longest), self.pad_id, dtype=np.int64)
        attention_mask = np.zeros((len(ids), longest), dtype=np.int64)
        for r, row in enumerate(ids):
            input_ids[r, : len(row)] = row
            attention_mask[r, : len(row)] = 1
        return TokenBatch(input_ids=input_ids, attention_mask=attention_mask)

    def encode_padded(self, texts: Sequence[str]) -> TokenBatch:
        """One dynamically padded batch for ``texts``."""
        return self.pad(self.encode(texts))

    def count_tokens(self, text: str) -> int:
        """WordPiece tokens in ``text``, without [CLS]/[SEP] and without truncation."""
        return self.count_tokens_batch([text])[0]

    def count_tokens_batch(self, texts: Sequence[str]) -> list[int]:
        """``count_tokens`` for many texts in one call."""
        if not texts:
            return []
        encodings = _encode_batch(self._counter, texts, add_special_tokens=False)
        return [len(e.ids) for e in encodings]


def _encode_batch(tokenizer: Tokenizer, texts: Sequence[str], *, add_special_tokens: bool) -> list[Encoding]:
    try:
        return tokenizer.encode_batch(list(texts), add_special_tokens=add_special_tokens)
    except TypeError:
        # Source read with errors="surrogateescape" carries lone surrogates, which cannot
        # cross into Rust; they become U+FFFD like any other undecodable byte.
        cleaned = [t.encode("utf-8", "replace").decode("utf-8") for t in texts]
        return tokenizer.encode_batch(cleaned, add_special_tokens=add_special_tokens)
