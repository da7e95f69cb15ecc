"""Stages 2 to 4: expansion through the live servers, derived calls, the learned graph, the symbol graph."""
