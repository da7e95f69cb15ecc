"""Per-server quirks: one adapter per language server family."""
