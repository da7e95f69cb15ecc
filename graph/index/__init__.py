"""Persistent per-root index: SQLite (files, symbols, chunks, FTS5) and hnswlib vectors."""
