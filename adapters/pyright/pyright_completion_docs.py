"""pyright's completion documentation in plaintext, for a client that lists no markdown.

pyright 1.1.414 writes an item's documentation in the first of markdown and plaintext the
client lists in `completionItem.documentationFormat` (plaintext when neither), and the shared
pyright is told markdown. It builds the documentation from parts (completionProvider.ts,
completionProviderUtils.ts getCompletionItemDocumentation), each trimmed at the end:

- an auto-import's text: "```\\nfrom m import x\\n```" in markdown, the text alone in plaintext,
  then a blank line when more follows;
- the type detail: "```python\\nT\\n```\\n" in markdown, "T\\n" in plaintext;
- the docstring: "---\\n" and its markdown, or "\\n" and its plaintext (convertDocStringToPlainText);
- a module's item, on resolve: the module's docstring alone, in either format.

The type detail and the import come back exactly; the docstring is read back as for hovers
(pyright_hover.py: exact unless it has one of the constructs listed there).
"""

from __future__ import annotations

from typing import Any

import msgspec

from lensmux.adapters.capabilities import markup_kind
from lensmux.adapters.pyright import pyright_hover

_FORMATS = "textDocument.completion.completionItem.documentationFormat"
_IMPORT = "```\n"
_PYTHON = "```python\n"
_SEPARATOR = "---\n"
_MODULE = 9  # CompletionItemKind.Module


def for_client(result: bytes, client_caps: dict[str, Any]) -> bytes | None:
    """The completion answer pyright alone gives this client; None when it is `result` itself."""
    if markup_kind(client_caps, _FORMATS) != "plaintext" or b'"markdown"' not in result:
        return None
    try:
        value = msgspec.json.decode(result)
    except msgspec.DecodeError:
        return None
    if isinstance(value, dict) and "label" in value:  # completionItem/resolve: one item
        items: Any = [value]
    elif isinstance(value, dict):
        items = value.get("items")
    else:
        items = value
    changed = False
    for item in items if isinstance(items, list) else []:
        doc = item.get("documentation") if isinstance(item, dict) else None
        if not isinstance(doc, dict) or doc.get("kind") != "markdown" or not isinstance(doc.get("value"), str):
            continue
        text = plaintext_documentation(doc["value"], module=item.get("kind") == _MODULE)
        if text is not None:
            item["documentation"] = {"kind": "plaintext", "value": text}
            changed = True
    return msgspec.json.encode(value) if changed else None


def plaintext_documentation(markdown: str, *, module: bool = False) -> str | None:
    """The plaintext pyright writes for the item whose markdown documentation this is; None if not its shape."""
    out = ""
    rest = markdown
    if rest.startswith(_IMPORT):
        end = rest.find("\n```", len(_IMPORT))
        if end < 0:
            return None
        out = rest[len(_IMPORT) : end]
        rest = rest[end + 4 :]
        if rest:
            if not rest.startswith("\n\n"):
                return None
            out += "\n\n"
            rest = rest[2:]
    if rest.startswith(_PYTHON):
        end = rest.find("\n```\n", len(_PYTHON))
        if end < 0:
            if not rest.endswith("\n```"):
                return None
            end = len(rest) - 4
        out += rest[len(_PYTHON) : end] + "\n"
        rest = rest[end + 5 :]
    elif not rest.startswith(_SEPARATOR) and out == "" and rest:
        # No part of pyright's own: a module's docstring alone, else not pyright's documentation.
        return pyright_hover.plaintext_docstring(rest) if module else None
    if rest.startswith(_SEPARATOR):
        out += "\n" + pyright_hover.plaintext_docstring(rest[len(_SEPARATOR) :])
    elif rest:
        return None
    return out.rstrip()
