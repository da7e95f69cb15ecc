"""The model files: packaged weights read, built into an ONNX graph, quantised, checked and cached."""
