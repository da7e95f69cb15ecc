"""The per-user caches every root shares, by content: vectors and documentSymbol answers, and their file."""
