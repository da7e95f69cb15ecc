"""Embedded language-server configurations (TOML data)."""
