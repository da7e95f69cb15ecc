"""clangd: background-index readiness, its index as one client sees it, hover and diagnostics per client."""
