"""Embedding model: ONNX graph built from packaged weights, quantised, tokenised."""
