"""The one error a tool reports to the model."""

from __future__ import annotations


class ToolError(Exception):
    """Bad input or an unavailable server; the message tells the model what to do next."""
