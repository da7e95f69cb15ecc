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
then, for one in a stub, the source declarations the stub maps to; each entry is added only
once (by URI and range). A name's declarations come in the order they are bound: one assigned
in the client's file and then imported from a module with a stub is
`[main.py, json/__init__.pyi, json/__init__.py]`. The stubs' part (declaration's answer) and
the sources' part (definition's) keep that order, so the list is the two interleaved, a stub
declaration's group (it and the overloads above it in its stub) before the sources it maps to.

Which source a stub maps to is told by module: pyright maps a stub's declaration to the
declarations of the source module of the same name (`json/__init__.pyi` to
`json/__init__.py`, `boxes.pyi` to `boxes.py` beside it), and a stub module itself (the target
of an import, an empty range at its start) to the source module. A source that is so told of a
stub's is placed after that stub's group; any other is a declaration of its own (`main.py`'s
`alias = None`, a source class's member where the type is a union with a stubbed class),
placed before every stub whose mapping comes after it in the sources' part.
`subprocess.check_output` is `[overload 1, subprocess.py, overload 2, ...]`, `os.path.join`
(its last overload resolved) `[overload 3, overload 1, overload 2, posixpath.py]`, a stub's
property `[getter stub, getter source, setter source, setter stub]`.

Where nothing says (a declaration of its own beside stubs that map to no source, or to a
source of another module: `typing.pyi` to `contextlib.py`), a source goes after the first
stub's group and before the others: `import stubbed as x` then `x = None` comes out right,
`x = None` then `import stubbed as x` does not.
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
    if not isinstance(sources, list) or not sources or sources == stubs:
        return stubs
    groups = _groups(stubs)
    kinds = [_kind(group[0]) for group in groups]
    # The group each source maps from; None: a declaration of its own (or a mapping to another module).
    anchors = [kinds.index(kind) if (kind := _kind(source)) in kinds else None for source in sources]
    merged: list[Any] = []
    placed = 0
    for index, (source, anchor) in enumerate(zip(sources, anchors, strict=True)):
        if anchor is not None:
            before = anchor + 1
        else:
            # Before every stub whose mapping comes later; else after the first group only.
            before = min([1, *(later for later in anchors[index + 1 :] if later is not None)])
        for group in groups[placed:before]:
            merged.extend(group)
        placed = max(placed, before)
        merged.append(source)
    for group in groups[placed:]:
        merged.extend(group)
    return merged


def _groups(stubs: list[Any]) -> list[list[Any]]:
    """The stubs' part cut at each declaration: it and the overloads above it in the same stub that follow it."""
    groups: list[list[Any]] = []
    for location in stubs:
        if groups and _uri(location) == _uri(groups[-1][0]) and _start(location) < _start(groups[-1][0]):
            groups[-1].append(location)
        else:
            groups.append([location])
    return groups


def _kind(location: Any) -> tuple[str | None, bool]:
    """The module a location is in, and whether it is that module itself (pyright's empty range at its start).

    A stub's declaration maps to declarations in its source module, the stub module itself (the
    declaration of an import) to the source module.
    """
    span = _span(location)
    whole = span is not None and span.get("start") == span.get("end") == {"line": 0, "character": 0}
    return _module(_uri(location)), whole


def _module(uri: Any) -> str | None:
    """The module a file holds, by its last name: `json` for `.../json/__init__.py` and `.../json/__init__.pyi`."""
    if not isinstance(uri, str):
        return None
    parts = uri.rstrip("/").split("/")
    name = parts[-1].removesuffix(".pyi").removesuffix(".py")
    if name == "__init__" and len(parts) > 1:
        name = parts[-2]
    return name.removesuffix("-stubs")


def _uri(location: Any) -> Any:
    return location.get("uri", location.get("targetUri")) if isinstance(location, dict) else None


def _span(location: Any) -> dict[str, Any] | None:
    span = location.get("range", location.get("targetSelectionRange")) if isinstance(location, dict) else None
    return span if isinstance(span, dict) else None


def _start(location: Any) -> tuple[int, int]:
    span = _span(location)
    start = span.get("start") if span is not None else None
    if not isinstance(start, dict):
        return (0, 0)
    line, character = start.get("line"), start.get("character")
    return (line if isinstance(line, int) else 0, character if isinstance(character, int) else 0)


def _js_truthy(value: Any) -> bool:
    """`!!value` in JavaScript: an empty object or list is true, null, false, 0 and "" are not."""
    return value is not None and value is not False and value not in (0, "")
