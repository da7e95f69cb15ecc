"""The team store's server: connections in the index's terms, its tables and roles, the pgvector it needs."""
