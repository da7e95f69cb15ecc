"""Requests in flight at one server: ids, the cache, deadlines, answers it gives none of, cancels, the daemon's own."""
