"""The semantic index: how fast lensmux indexes a real repository against the raw model, and its memory.

`throughput` runs it all: (a) the raw onnxruntime ceiling (`raw_model`),
(b) lensmux end to end through a real daemon and (d) its resident memory
(`daemon_indexing`), (c) hnswlib latency and recall (`hnsw_search`), on pinned
PyPI sdists (`corpus`). Nothing here measures the multiplexer or search quality.
"""
