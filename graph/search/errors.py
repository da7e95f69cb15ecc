"""Errors raised by the hybrid search.

SearchError
 +-- BadSearchRequest      the request itself is wrong (HTTP 400, JSON-RPC invalid params)
 |    +-- UnknownRoot      the root is not one lensmux indexes (HTTP 404)
 |    +-- RootNotReady     the root is known but has no usable index yet (HTTP 409)
 +-- SearchFailed          the index could not be read (HTTP 500); never caused by a language server
 +-- GatewayError          a language-server request failed; caught inside the pipeline, never escapes search()
"""

from __future__ import annotations

INVALID_PARAMS = -32602
METHOD_NOT_FOUND = -32601


class SearchError(Exception):
    """Base of every error the search package raises."""


class BadSearchRequest(SearchError, ValueError):
    """A request that cannot be answered as asked; `field` names the offending member (dotted)."""

    http_status = 400
    rpc_code = INVALID_PARAMS

    def __init__(self, field: str | None, reason: str) -> None:
        super().__init__(f"{field}: {reason}" if field else reason)
        self.field = field
        self.reason = reason

    def as_dict(self) -> dict[str, object]:
        """The JSON error body shared by the HTTP endpoint and the control socket."""
        return {"error": type(self).__name__, "field": self.field, "reason": self.reason}


class UnknownRoot(BadSearchRequest):
    """The asked root is not (under) any root lensmux knows."""

    http_status = 404


class RootNotReady(BadSearchRequest):
    """The root is known but nothing of it is indexed yet."""

    http_status = 409


class SearchFailed(SearchError):
    """The index failed while answering (corrupt, closed under us, I/O error)."""


class GatewayError(SearchError):
    """A language-server request failed; `code` is the JSON-RPC error code when the server sent one."""

    def __init__(self, reason: str, *, code: int | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.code = code
