"""Definition and declaration for a client that declared `textDocument.declaration`, as pyright alone filters them.

pyright 1.1.414 chooses a filter for `textDocument/definition` and `textDocument/declaration`
from one capability of the client it serves (`hasGoToDeclarationCapability`, set when
`textDocument.declaration` is anything JavaScript counts as true, `{}` included), and reads it
nowhere else. Without it both answer the whole list (`DefinitionFilter.All`): each declaration
of the name in the order it is bound, for an overloaded function the overloads its type holds,
and for one in a stub the source declarations the stub maps to, each entry once
(`[main.py, json/__init__.pyi, json/__init__.py]` for a name assigned in `main.py`, then
imported by `import json as alias`). With it, definition keeps the list's source files when
it has any (`PreferSource`) and declaration its stubs (`PreferStubs`), in the list's order
(`filterDefinitions`). One more step is definition's alone (`addDeclarationsToDefinitions`
under `PreferSource`): a declaration in typeshed's `stdlib/typing.pyi` whose source mappings
hold a class or function of a source file does not list the mapped variables of typing.py
assigned from `_alias(...)` (`isAliasFactoryCallee`): `typing.AsyncContextManager` is
`[typing.pyi, typing.py, contextlib.py]` whole and `[contextlib.py]` as definition.

So the shared pyright is told no `textDocument.declaration` (pyright.py, adjust_capabilities):
it answers both methods with the whole list, which a client without the capability (Helix,
Serena, the MCP bridges) gets as it is, and which is filtered here for a client with it (VS
Code, Neovim, Emacs). The filter needs only the list, except for the alias variables: a
Location does not say whether it is a variable or a class, so the lines are read from the
files. They are read on the event loop, but only for a definition list with both a typing.pyi
and a typing.py entry (a typing name asked by such a client: typing.py and the few files beside
it in the list, all local and small), so no other answer waits on the disk.

Where the filtered list still is not a function of the whole one: the mapped declarations pyright
checks for a class or function are all the stub maps to, while the list shows only those not
listed before (none such was seen), and an alias variable listed again later by another
declaration would stay where pyright lists it.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import msgspec

from lensmux.adapters.capabilities import declared

DEFINITION = "textDocument/definition"
DECLARATION = "textDocument/declaration"
# What pyright filters by the capability (typeDefinition always answers the whole list).
METHODS = frozenset({DEFINITION, DECLARATION})

# How a stub's URI ends in an answer's JSON: a list without it holds no stub.
_STUB_URI_END = b'.pyi"'
# pyright's test of a stub declaration (`pathEndsWith("stdlib/typing.pyi")`) and of the module
# of a mapped one ("typing").
_TYPING_STUB = "/stdlib/typing.pyi"
_TYPING_SOURCE = "/typing.py"
# From a variable's name on, its line in typing.py when the value is a call of `_alias`.
_ALIAS_CALL = re.compile(r"\w+\s*(?::[^=]*)?=\s*_alias\s*\(")
# A class or function declaration's line up to its name (pyright's range is the name's).
_CLASS_OR_DEF = re.compile(r"\s*(?:class|(?:async\s+)?def)\s+")


def for_client(method: str, result: bytes, client_caps: dict[str, Any]) -> bytes | None:
    """pyright's answer to this client's `method`, from its whole list `result`; None: the same bytes."""
    if method not in METHODS or not _js_truthy(declared(client_caps, "textDocument.declaration")):
        return None
    if _STUB_URI_END not in result:
        # No stub in the list (the usual answer, in the workspace's own code): both filters keep it whole.
        return None
    whole = msgspec.json.decode(result)
    if not isinstance(whole, list) or len(whole) < 2:
        return None
    kept = filtered(method, whole)
    return None if kept == whole else msgspec.json.encode(kept)


def filtered(method: str, whole: list[Any]) -> list[Any]:
    """The list pyright gives a client with `textDocument.declaration`, from the one it gives a client without."""
    if method == DEFINITION:
        whole = _without_alias_variables(whole)
    stubs = method == DECLARATION
    kept = [location for location in whole if _is_stub(location) == stubs]
    return kept if kept else whole


def _without_alias_variables(locations: list[Any]) -> list[Any]:
    """Without the typing.py `_alias` variables a typing.pyi declaration maps to beside a source class or function.

    A stub declaration's mappings follow it (and its overloads) in the list, up to the next stub
    entry; only a list with both kinds of typing entry is read from disk.
    """
    uris = [_uri(location) for location in locations]
    if not any(uri.endswith(_TYPING_STUB) for uri in uris) or not any(uri.endswith(_TYPING_SOURCE) for uri in uris):
        return locations
    lines = _Lines()
    dropped: set[int] = set()
    index = 0
    while index < len(locations):
        if not uris[index].endswith(_TYPING_STUB):
            index += 1
            continue
        end = index + 1
        while end < len(locations) and not _is_stub(locations[end]):
            end += 1
        mapped = range(index + 1, end)
        if any(_CLASS_OR_DEF.fullmatch(lines.before(locations[at])) for at in mapped):
            dropped.update(
                at
                for at in mapped
                if uris[at].endswith(_TYPING_SOURCE) and _ALIAS_CALL.match(lines.from_start(locations[at]))
            )
        index = end
    return [location for at, location in enumerate(locations) if at not in dropped]


class _Lines:
    """The lines of the files a list names, each file read once (empty where it cannot be read)."""

    def __init__(self) -> None:
        self._files: dict[str, list[str]] = {}

    def before(self, location: Any) -> str:
        """The text of the location's line before its start."""
        line, character = _start(location)
        return self._line(_uri(location), line)[:character]

    def from_start(self, location: Any) -> str:
        """The text of the location's line from its start on."""
        line, character = _start(location)
        return self._line(_uri(location), line)[character:]

    def _line(self, uri: str, line: int) -> str:
        if uri not in self._files:
            self._files[uri] = _read_lines(uri)
        text = self._files[uri]
        return text[line] if 0 <= line < len(text) else ""


def _read_lines(uri: str) -> list[str]:
    parts = urlsplit(uri)
    if parts.scheme != "file":
        return []
    try:
        return Path(unquote(parts.path)).read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return []


def _is_stub(location: Any) -> bool:
    """pyright's `isStubFile`: the file's extension is `.pyi`."""
    return _uri(location).endswith(".pyi")


def _uri(location: Any) -> str:
    uri = location.get("uri", location.get("targetUri")) if isinstance(location, dict) else None
    return uri if isinstance(uri, str) else ""


def _start(location: Any) -> tuple[int, int]:
    span = location.get("range", location.get("targetSelectionRange")) if isinstance(location, dict) else None
    start = span.get("start") if isinstance(span, dict) else None
    if not isinstance(start, dict):
        return (0, 0)
    line, character = start.get("line"), start.get("character")
    return (line if isinstance(line, int) else 0, character if isinstance(character, int) else 0)


def _js_truthy(value: Any) -> bool:
    """`!!value` in JavaScript: an empty object or list is true, null, false, 0 and "" are not."""
    return value is not None and value is not False and value not in (0, "")
