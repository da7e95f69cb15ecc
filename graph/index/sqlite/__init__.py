"""The embedded index store, the default: one SQLite database (files, symbols, chunks, FTS5,
the learned call graph) and one hnswlib file of vectors per root, in the user's state directory.

`Store` is the IndexWriter and `VectorIndex` the VectorWriter of graph/index/interface.py;
`IndexFiles` keeps the two consistent across crashes (the database is the truth).
"""
