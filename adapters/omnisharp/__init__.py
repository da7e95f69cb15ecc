"""OmniSharp: `-lsp`, `--hostPID`, solution discovery and dynamic registrations."""
