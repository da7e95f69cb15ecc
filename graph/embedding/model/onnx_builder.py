"""Build the float32 ONNX graph of a BERT sentence encoder from numpy weights.

The graph is the whole sentence-transformers pipeline, so a caller only tokenises:

    input_ids [batch, seq] int64, attention_mask [batch, seq] int64
      -> BERT encoder -> mean pooling over attention_mask -> L2 normalisation
      -> sentence_embedding [batch, hidden] float32

Both axes are dynamic. With ``int8=True`` the weight GEMMs and the word-embedding table
are int8 (``int8_ops``). Nothing in the graph mixes rows of a batch, so a text's vector
does not depend on its batch: pooling is a batched MatMul with the mask, because
ReduceSum over the sequence axis sums in another order when the batch has one row.
Every token has token type 0 (lensmux embeds single texts,
never sentence pairs), so the type-0 embedding row is folded into the position
embedding table and the graph has no token_type_ids input.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt
import onnx
from onnx import TensorProto, helper, numpy_helper

from lensmux.graph.embedding.model import int8_ops
from lensmux.graph.embedding.model.weights import BertWeights
from lensmux.graph.embedding.spec import ModelBuildFailed

# Bump whenever the graph changes, so caches built by older code are rebuilt.
BUILDER_VERSION = "2"
OPSET = 17  # first opset with LayerNormalization
IR_VERSION = 8  # the IR that goes with opset 17; older onnxruntimes refuse newer IRs
INPUT_IDS = "input_ids"
ATTENTION_MASK = "attention_mask"
OUTPUT = "sentence_embedding"

# Large but finite: -inf would turn a fully masked row into NaN instead of zeros.
_MASKED_SCORE = -1.0e9
_POOL_EPS = 1e-9  # sentence-transformers clamps the token count with this
_NORM_EPS = 1e-12  # torch.nn.functional.normalize's default eps


class _Graph:
    """Accumulates nodes and initializers, handing out unique tensor names."""

    def __init__(self) -> None:
        self.nodes: list[onnx.NodeProto] = []
        self.initializers: list[TensorProto] = []
        self._counter = 0

    def const(self, name: str, array: npt.NDArray[np.generic]) -> str:
        self.initializers.append(numpy_helper.from_array(np.ascontiguousarray(array), name))
        return name

    def op(self, op_type: str, inputs: list[str], prefix: str, **attrs: Any) -> str:
        self._counter += 1
        out = f"{prefix}/{op_type}_{self._counter}"
        self.nodes.append(helper.make_node(op_type, inputs, [out], name=out, **attrs))
        return out

    def ops(self, op_type: str, inputs: list[str], prefix: str, n: int, **attrs: Any) -> list[str]:
        self._counter += 1
        outs = [f"{prefix}/{op_type}_{self._counter}_{i}" for i in range(n)]
        name = f"{prefix}/{op_type}_{self._counter}"
        self.nodes.append(helper.make_node(op_type, inputs, outs, name=name, **attrs))
        return outs


def _f32(value: float) -> npt.NDArray[np.float32]:
    return np.array(value, dtype=np.float32)


def _i64(values: list[int]) -> npt.NDArray[np.int64]:
    return np.array(values, dtype=np.int64)


def build_encoder(
    weights: BertWeights,
    *,
    metadata: dict[str, str] | None = None,
    progress: Callable[[float], None] | None = None,
    int8: bool = False,
) -> onnx.ModelProto:
    """Return the checked sentence-embedding model for ``weights`` (float32, or int8 GEMMs)."""
    try:
        model = _EncoderBuilder(weights, int8).build(metadata or {}, progress or (lambda _f: None))
        onnx.checker.check_model(model)
    except (ValueError, KeyError, onnx.checker.ValidationError) as exc:
        raise ModelBuildFailed(f"cannot build the encoder graph: {exc}") from exc
    return model


class _EncoderBuilder:
    """Emits the encoder's nodes in order; one instance builds one model."""

    def __init__(self, weights: BertWeights, int8: bool) -> None:
        self.w = weights
        self.int8 = int8
        self.g = _Graph()
        self.eps = float(weights.config.layer_norm_eps)

    def build(self, metadata: dict[str, str], progress: Callable[[float], None]) -> onnx.ModelProto:
        cfg = self.w.config
        g = self.g
        hidden, heads, head_size = cfg.hidden_size, cfg.num_attention_heads, cfg.head_size
        g.const("const/zero_1d", _i64([0]))
        g.const("const/one_f32", _f32(1.0))
        g.const("const/half_f32", _f32(0.5))
        g.const("const/sqrt2_f32", _f32(math.sqrt(2.0)))
        g.const("const/masked_score", _f32(_MASKED_SCORE))
        g.const("const/score_scale", _f32(1.0 / math.sqrt(head_size)))
        g.const("const/axes_1", _i64([1]))
        g.const("const/axes_1_2", _i64([1, 2]))
        g.const("const/heads_shape", _i64([0, 0, heads, head_size]))
        g.const("const/hidden_shape", _i64([0, 0, hidden]))
        g.const("const/qkv_split", _i64([hidden, hidden, hidden]))
        g.const("const/pool_eps", _f32(_POOL_EPS))
        g.const("const/norm_eps", _f32(_NORM_EPS))
        if self.int8:
            int8_ops.add_constants(g)

        x = self.embeddings()
        bias = self.attention_bias()
        progress(0.1)
        for layer in range(cfg.num_hidden_layers):
            x = self.encoder_layer(layer, x, bias)
            progress(0.1 + 0.8 * (layer + 1) / cfg.num_hidden_layers)
        self.l2_normalise(self.mean_pool(x))

        ids_info = helper.make_tensor_value_info(INPUT_IDS, TensorProto.INT64, ["batch", "sequence"])
        mask_info = helper.make_tensor_value_info(ATTENTION_MASK, TensorProto.INT64, ["batch", "sequence"])
        out_info = helper.make_tensor_value_info(OUTPUT, TensorProto.FLOAT, ["batch", hidden])
        graph = helper.make_graph(
            g.nodes,
            "lensmux_sentence_encoder",
            inputs=[ids_info, mask_info],
            outputs=[out_info],
            initializer=g.initializers,
        )
        model = helper.make_model(
            graph,
            opset_imports=[helper.make_opsetid("", OPSET)],
            producer_name="lensmux",
            producer_version=BUILDER_VERSION,
        )
        model.ir_version = IR_VERSION
        helper.set_model_props(model, metadata)
        progress(1.0)
        return model

    def layer_norm(self, x: str, tensor_prefix: str, prefix: str) -> str:
        """LayerNorm with the ``<tensor_prefix>.weight`` / ``.bias`` tensors."""
        scale = self.g.const(f"{prefix}/ln_weight", self.w[f"{tensor_prefix}.weight"])
        shift = self.g.const(f"{prefix}/ln_bias", self.w[f"{tensor_prefix}.bias"])
        return self.g.op("LayerNormalization", [x, scale, shift], prefix, axis=-1, epsilon=self.eps)

    def linear(self, x: str, weight: npt.NDArray[np.float32], bias: npt.NDArray[np.float32], prefix: str) -> str:
        """x @ weight.T + bias for a Hugging Face [out, in] Linear weight."""
        # A constant [in, out] B operand: the transpose is done here once, not in the graph.
        if self.int8:
            return int8_ops.quantized_linear(self.g, x, np.ascontiguousarray(weight.T), bias, prefix)
        w = self.g.const(f"{prefix}/weight", np.ascontiguousarray(weight.T))
        b = self.g.const(f"{prefix}/bias", bias)
        return self.g.op("Add", [self.g.op("MatMul", [x, w], prefix), b], prefix)

    def embeddings(self) -> str:
        g, p = self.g, "embeddings"
        # Token type is always 0, so its row rides along with every position row.
        positions_plus_type = (
            self.w["embeddings.position_embeddings.weight"] + self.w["embeddings.token_type_embeddings.weight"][0]
        )
        pos_table = g.const(f"{p}/position_plus_type0", positions_plus_type)
        word_table = self.w["embeddings.word_embeddings.weight"]
        if self.int8:
            words = int8_ops.quantized_gather(g, word_table, INPUT_IDS, f"{p}/word")
        else:
            words = g.op("Gather", [g.const(f"{p}/word", word_table), INPUT_IDS], p, axis=0)
        # Slicing the first seq rows (rather than Gather over a Range) keeps clear of an
        # onnxruntime fusion that rewrites Gather(Range) into a malformed Slice.
        seq_len = g.op("Shape", [INPUT_IDS], p, start=1, end=2)
        positions = g.op("Slice", [pos_table, "const/zero_1d", seq_len, "const/zero_1d"], p)
        return self.layer_norm(g.op("Add", [words, positions], p), "embeddings.LayerNorm", p)

    def attention_bias(self) -> str:
        """[batch, 1, 1, seq] additive score bias: 0 for real tokens, very negative for padding."""
        g, p = self.g, "attention_bias"
        mask = g.op("Cast", [ATTENTION_MASK], p, to=TensorProto.FLOAT)
        inverted = g.op("Sub", ["const/one_f32", mask], p)
        bias = g.op("Mul", [inverted, "const/masked_score"], p)
        return g.op("Unsqueeze", [bias, "const/axes_1_2"], p)

    def encoder_layer(self, i: int, x: str, bias: str) -> str:
        g, w, p = self.g, self.w, f"layer{i}"
        names = ("query", "key", "value")
        # One [hidden, 3*hidden] GEMM instead of three narrow ones.
        qkv_weight = np.concatenate([w.layer(i, f"attention.self.{n}.weight") for n in names])
        qkv_bias = np.concatenate([w.layer(i, f"attention.self.{n}.bias") for n in names])
        qkv = self.linear(x, qkv_weight, qkv_bias, f"{p}/qkv")
        q, k, v = g.ops("Split", [qkv, "const/qkv_split"], f"{p}/attn", 3, axis=-1)
        q = g.op("Transpose", [g.op("Reshape", [q, "const/heads_shape"], p)], p, perm=[0, 2, 1, 3])
        k = g.op("Transpose", [g.op("Reshape", [k, "const/heads_shape"], p)], p, perm=[0, 2, 3, 1])
        v = g.op("Transpose", [g.op("Reshape", [v, "const/heads_shape"], p)], p, perm=[0, 2, 1, 3])
        scores = g.op("Mul", [g.op("MatMul", [q, k], p), "const/score_scale"], p)
        probs = g.op("Softmax", [g.op("Add", [scores, bias], p)], p, axis=-1)
        context = g.op("Transpose", [g.op("MatMul", [probs, v], p)], p, perm=[0, 2, 1, 3])
        context = g.op("Reshape", [context, "const/hidden_shape"], p)
        attended = self.linear(
            context,
            w.layer(i, "attention.output.dense.weight"),
            w.layer(i, "attention.output.dense.bias"),
            f"{p}/attn_out",
        )
        x = self.layer_norm(
            g.op("Add", [attended, x], p),
            f"encoder.layer.{i}.attention.output.LayerNorm",
            f"{p}/attn_ln",
        )
        inner = self.linear(
            x,
            w.layer(i, "intermediate.dense.weight"),
            w.layer(i, "intermediate.dense.bias"),
            f"{p}/ffn_in",
        )
        outer = self.linear(
            self.gelu(inner, f"{p}/gelu"),
            w.layer(i, "output.dense.weight"),
            w.layer(i, "output.dense.bias"),
            f"{p}/ffn_out",
        )
        return self.layer_norm(g.op("Add", [outer, x], p), f"encoder.layer.{i}.output.LayerNorm", f"{p}/ffn_ln")

    def gelu(self, x: str, p: str) -> str:
        """Exact (erf) GELU, BERT's "gelu"; onnxruntime fuses this pattern into one kernel."""
        g = self.g
        erf = g.op("Erf", [g.op("Div", [x, "const/sqrt2_f32"], p)], p)
        half_x = g.op("Mul", [x, "const/half_f32"], p)
        return g.op("Mul", [half_x, g.op("Add", [erf, "const/one_f32"], p)], p)

    def mean_pool(self, x: str) -> str:
        g, p = self.g, "pooling"
        mask = g.op("Cast", [ATTENTION_MASK], p, to=TensorProto.FLOAT)
        # [batch, 1, seq] @ [batch, seq, hidden]: each row's sum in the same order at any batch size.
        summed = g.op("MatMul", [g.op("Unsqueeze", [mask, "const/axes_1"], p), x], p)
        summed = g.op("Squeeze", [summed, "const/axes_1"], p)
        counts = g.op("ReduceSum", [mask, "const/axes_1"], p, keepdims=1)
        return g.op("Div", [summed, g.op("Max", [counts, "const/pool_eps"], p)], p)

    def l2_normalise(self, x: str) -> None:
        p = "normalize"
        # Below opset 18 ReduceL2 takes its axes as an attribute (ReduceSum moved at 13).
        norm = self.g.op("ReduceL2", [x], p, axes=[1], keepdims=1)
        clamped = self.g.op("Max", [norm, "const/norm_eps"], p)
        self.g.nodes.append(helper.make_node("Div", [x, clamped], [OUTPUT], name=f"{p}/output"))
