"""Diagnostics: the server's pushes kept per document, pushed or pulled per client, worded for it, nudged."""
