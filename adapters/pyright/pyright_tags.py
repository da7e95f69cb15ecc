"""pyright's tagged hints, kept only for a client that declared their tag.

pyright 1.1.414 (`_convertDiagnostics`) gives unused and unreachable code the tag
Unnecessary (1) and a deprecated use the tag Deprecated (2), both at severity Hint, and
drops such a diagnostic for a client whose `textDocument.publishDiagnostics.tagSupport
.valueSet` lacks its tag; it sets no tag on any other diagnostic. The shared pyright is
told the daemon's capabilities, which list every tag, so it publishes them all: a client
without the tag is shown the set without those, as its own pyright would show it.
"""

from __future__ import annotations

from typing import Any

from lensmux.adapters.capabilities import declared

# The tags pyright sets, each on the only kind of diagnostic it publishes with it.
_PYRIGHT_TAGS = frozenset({1, 2})


def undeclared_tags(client_caps: dict[str, Any]) -> frozenset[int]:
    """pyright's tags the client did not list in publishDiagnostics.tagSupport.valueSet."""
    value_set = declared(client_caps, "textDocument.publishDiagnostics.tagSupport.valueSet")
    listed = {t for t in value_set if isinstance(t, int)} if isinstance(value_set, list) else set()
    return _PYRIGHT_TAGS - listed


def without_undeclared(diagnostics: list[Any], undeclared: frozenset[int]) -> list[tuple[Any, Any]] | None:
    """(diagnostic, itself) for those pyright alone would send; None when that is every one."""
    if not undeclared or not any(_tagged(d, undeclared) for d in diagnostics):
        return None
    return [(d, d) for d in diagnostics if not _tagged(d, undeclared)]


def _tagged(diag: Any, undeclared: frozenset[int]) -> bool:
    tags = diag.get("tags") if isinstance(diag, dict) else None
    return isinstance(tags, list) and any(t in undeclared for t in tags)
