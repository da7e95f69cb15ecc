"""The error of the daemon's search side, importable without the search stack (on_demand.py)."""

from __future__ import annotations


class IndexServiceError(Exception):
    """A root cannot be indexed (not a directory, model unavailable, store locked)."""
