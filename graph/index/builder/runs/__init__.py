"""A full run: what it indexes first, its stages, and the writer that commits their batches."""
