"""Go to definition for a client that did not declare `textDocument.declaration`, as pyright alone answers it.

pyright 1.1.414 chooses a filter for `textDocument/definition` and `textDocument/declaration`
from one capability of the client it serves (`hasGoToDeclarationCapability`, set when
`textDocument.declaration` is anything JavaScript counts as true, `{}` included). With it,
definition keeps the list's source files when it has any (`DefinitionFilter.PreferSource`)
and declaration its stubs (`PreferStubs`); without it both answer the whole list
(`DefinitionFilter.All`). The shared pyright is told the capability, so a client that lacks it
(Helix, Serena, the MCP bridges) has the whole list rebuilt from the two filtered answers.

The whole list is built declaration by declaration: each resolved declaration, then, for an
overloaded function, the overloads the declaration's type holds (those up to it, in order),
then, for one in a stub, the source declarations the stub maps to, each added only once (by
URI and range). The stubs' part (declaration's answer) and the sources' part (definition's)
keep that order; where they interleave follows from the first declaration: its stub, the
overloads above it in the same stub, then every source. `subprocess.check_output` is
`[overload 1, subprocess.py, overload 2, ...]`, `os.path.join` (its last overload resolved)
`[overload 3, overload 1, overload 2, posixpath.py]`, a stub's property
`[getter stub, getter source, setter source, setter stub]`.
"""

from __future__ import annotations

from typing import Any

from lensmux.adapters.capabilities import declared

DEFINITION = "textDocument/definition"
DECLARATION = "textDocument/declaration"
# What pyright filters by the capability (typeDefinition always answers the whole list).
METHODS = frozenset({DEFINITION, DECLARATION})
# The shared pyright's answers merged for such a client, in this order: the stubs, then the sources.
ASKED = (DECLARATION, DEFINITION)


def asks_both(method: str, client_caps: dict[str, Any]) -> bool:
    """Whether pyright alone would answer this client's `method` with the whole, unfiltered list."""
    return method in METHODS and not _js_truthy(declared(client_caps, "textDocument.declaration"))


def unfiltered(stubs: Any, sources: Any) -> Any:
    """pyright's whole list from its declaration answer (stubs preferred) and definition answer (sources preferred).

    Each is null when pyright found nothing, else a list of Locations; when the list holds only
    stubs or only sources both answers are that list.
    """
    if not isinstance(stubs, list) or not stubs:
        return sources
    if not isinstance(sources, list):
        return stubs
    head = _first_group(stubs)
    merged: list[Any] = []
    seen: set[tuple[Any, ...]] = set()
    for location in (*stubs[:head], *sources, *stubs[head:]):
        key = _identity(location)
        if key not in seen:
            seen.add(key)
            merged.append(location)
    return merged


def _first_group(stubs: list[Any]) -> int:
    """How many leading stub entries come before the first declaration's sources: it and its overloads above it."""
    first = stubs[0]
    count = 1
    while count < len(stubs) and _uri(stubs[count]) == _uri(first) and _start(stubs[count]) < _start(first):
        count += 1
    return count


def _uri(location: Any) -> Any:
    return location.get("uri", location.get("targetUri")) if isinstance(location, dict) else None


def _start(location: Any) -> tuple[int, int]:
    if not isinstance(location, dict):
        return (0, 0)
    span = location.get("range", location.get("targetSelectionRange"))
    start = span.get("start") if isinstance(span, dict) else None
    if not isinstance(start, dict):
        return (0, 0)
    line, character = start.get("line"), start.get("character")
    return (line if isinstance(line, int) else 0, character if isinstance(character, int) else 0)


def _identity(location: Any) -> tuple[Any, ...]:
    """pyright adds an entry once per URI and range."""
    if not isinstance(location, dict):
        return (repr(location),)
    span = location.get("range", location.get("targetSelectionRange"))
    return (_uri(location), repr(span))


def _js_truthy(value: Any) -> bool:
    """`!!value` in JavaScript: an empty object or list is true, null, false, 0 and "" are not."""
    return value is not None and value is not False and value not in (0, "")
