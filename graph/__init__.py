"""Semantic index and hybrid search."""
