"""Helpers shared by the test suite (tests/ is on sys.path): LSP test client, fakes, projects."""
