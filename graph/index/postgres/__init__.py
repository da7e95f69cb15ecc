"""The team store: PostgreSQL with pgvector, shared by every clone of a repository (issue 24).

One database holds many repositories (each known by the root commit of its history) and,
per repository, a snapshot per published commit. `SnapshotStore` is the IndexWriter and
`SnapshotVectors` the VectorWriter of graph/index/interface.py for one snapshot; keyword
scores are FTS5's BM25 computed in SQL (terms.py, keyword.py) so rankings match the
embedded store's. `TeamStore` holds the connections (libpq DSNs, psycopg 3).
"""
