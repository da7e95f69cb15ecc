"""A server process's life: spawned and linked, guarded by its breaker, recycled when bloated, warmed up."""
