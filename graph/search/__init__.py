"""Hybrid search pipeline: seeds, live expansion, graph, clusters, rerank, context."""
