"""What a tool needs of LSP: the workspace as one call sees it, where to ask, positions and locations."""
