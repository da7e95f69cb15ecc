"""Building a root's index: walking, chunking, preparing, embedding, writing, watching."""
