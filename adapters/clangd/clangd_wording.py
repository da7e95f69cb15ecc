"""clangd's wording of diagnostics for a client that cannot take `relatedInformation`.

clangd words each diagnostic by what the client declared
(`textDocument.publishDiagnostics.relatedInformation`). The shared clangd is told
the daemon supports related information, so it sends the structured form: the
main message, and each note as a related location. A client that declared no
such support would have had, from clangd alone, the notes folded into the main
message ("file:line:col: note: ...") and each note in the main file as a
diagnostic of its own (severity Information) that quotes the main one. This
module rebuilds that form from the structured one.
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath
from typing import Any
from urllib.parse import unquote, urlsplit

# clang's names of diagnostic levels, by the LSP severity clangd maps them to.
_LEVELS = {1: "error", 2: "warning", 3: "note", 4: "remark"}
_NOTE_SEVERITY = 3
# What clangd appends to a message that comes with fixes.
_FIXES_SUFFIX = re.compile(r" \(fix(?:es)? available\)$")


def fold_related(uri: str, diagnostics: list[Any]) -> list[tuple[Any, Any]]:
    """(diagnostic as clangd alone words it for such a client, the structured one it comes from), in order."""
    out: list[tuple[Any, Any]] = []
    for diag in diagnostics:
        related = _related(diag)
        if not related:
            plain = {k: v for k, v in diag.items() if k != "relatedInformation"} if isinstance(diag, dict) else diag
            out.append((plain, diag))
            continue
        main = {k: v for k, v in diag.items() if k != "relatedInformation"}
        message = str(diag.get("message", ""))
        for note in related:
            message += "\n\n" + _located(uri, note["location"]) + "note: " + _as_clang_wrote_it(note["message"])
        main["message"] = message
        out.append((main, diag))
        level = _LEVELS.get(diag.get("severity", 1), "error")
        quoted = _as_clang_wrote_it(_FIXES_SUFFIX.sub("", str(diag.get("message", ""))))
        where = _located(uri, {"uri": uri, "range": diag.get("range")})
        for note in related:
            if note["location"].get("uri") != uri:
                # Notes in other files are only folded into the main message.
                continue
            text = f"{note['message']}\n\n{where}{level}: {quoted}"
            out.append(({"range": note["location"]["range"], "severity": _NOTE_SEVERITY, "message": text}, diag))
    return out


def _related(diag: Any) -> list[dict[str, Any]]:
    if not isinstance(diag, dict) or not isinstance(diag.get("relatedInformation"), list):
        return []
    return [
        r
        for r in diag["relatedInformation"]
        if isinstance(r, dict)
        and isinstance(r.get("message"), str)
        and isinstance(r.get("location"), dict)
        and isinstance(r["location"].get("range"), dict)
    ]


def _located(main_uri: str, location: dict[str, Any]) -> str:
    """clangd's `file:line:col:` prefix: the base name in the main file, the full path (and a newline) elsewhere."""
    start = (location.get("range") or {}).get("start") or {}
    line, col = int(start.get("line", 0)) + 1, int(start.get("character", 0)) + 1
    uri = str(location.get("uri") or main_uri)
    path = unquote(urlsplit(uri).path)
    if uri == main_uri:
        return f"{PurePosixPath(path).name}:{line}:{col}: "
    return f"{path}:{line}:{col}:\n"


def _as_clang_wrote_it(message: str) -> str:
    """Undo clangd's capitalisation of the first letter (clang's messages start in lower case)."""
    if len(message) >= 2 and message[0].isupper() and not message[1].isupper():
        return message[0].lower() + message[1:]
    return message
