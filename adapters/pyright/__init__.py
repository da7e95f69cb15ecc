"""pyright: configuration, analysis progress, workspace discovery, broken cancels, its hover in plaintext."""
