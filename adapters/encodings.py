"""The position encodings the daemon offers a server: UTF-16 only.

A client's own offers are never passed through: the server is shared, and a
server speaking the first client's encoding would be wrong for every client
that cannot speak it. clangd reads its older `offsetEncoding` extension as
well as LSP 3.17 `general.positionEncodings`, so both are set.
"""

from __future__ import annotations

from typing import Any

# The one encoding every LSP client must support.
OFFERED_ENCODING = "utf-16"


def offer_positions(capabilities: dict[str, Any]) -> dict[str, Any]:
    """A copy of `capabilities` offering the server UTF-16 positions only."""
    caps = dict(capabilities)
    general = dict(caps.get("general") or {})
    general["positionEncodings"] = [OFFERED_ENCODING]
    caps["general"] = general
    caps["offsetEncoding"] = [OFFERED_ENCODING]
    return caps
