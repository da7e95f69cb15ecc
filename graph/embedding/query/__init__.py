"""The query adapter: a low-rank update of query vectors, its fitting, and the file shipped per model."""
