"""Search reasons (`seed:vector:0.55`, `expanded:calls:add`) as short phrases a person or a model reads."""

from __future__ import annotations


def describe_reason(reason: str) -> str:
    """One reason in words; unknown forms are returned as they are."""
    head, _, rest = reason.partition(":")
    if head == "anchor":
        return "file named in the query" if rest == "explicit_file" else "named in the query"
    if head == "seed":
        kind, _, value = rest.partition(":")
        if kind == "vector":
            return f"similar meaning ({value})"
        if kind == "keyword":
            return f"keyword match (#{value})" if value else "keyword match"
        if kind == "mention":
            return "mentioned in the query"
    if head == "expanded":
        kind, _, name = rest.partition(":")
        words = {"calls": "calls", "called_by": "called by"}.get(kind, kind.replace("_", " "))
        return f"{words} {name}".strip()
    return reason


def describe_reasons(reasons: list[str], limit: int = 3) -> str:
    """The first `limit` reasons in words, joined."""
    return "; ".join(describe_reason(r) for r in reasons[:limit])
