"""Running the model: the tokenizer and its remembered counts, the onnxruntime session, the heap after a run."""
