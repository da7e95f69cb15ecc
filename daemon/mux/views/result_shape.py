"""Server answers adjusted to what one client declared: snippets, label details, `documentChanges`, hover format.

The server was told the daemon's rich capabilities (adapters/capabilities.py),
so it may answer with snippet completions, versioned `documentChanges` and
markdown hovers; a client that declared none of them gets plain-text completions,
`changes` maps and the hover the server renders in plaintext (rebuilt by the
adapter), as a server initialized by that client alone would have sent.
Only answers that can contain them are decoded, and only for such clients.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from typing import Any

from msgspec import Raw

from lensmux.daemon.mux.clients.client_caps import declared, hover_format, supports_document_changes, supports_snippets
from lensmux.daemon.wire import envelope as ev

log = logging.getLogger(__name__)

COMPLETION_METHODS = frozenset({"textDocument/completion", "completionItem/resolve"})
SYMBOLS_METHOD = "textDocument/documentSymbol"
HOVER_METHOD = "textDocument/hover"
# Answers that are or contain WorkspaceEdits.
EDIT_METHODS = frozenset(
    {
        "textDocument/rename",
        "textDocument/codeAction",
        "codeAction/resolve",
        "workspace/willRenameFiles",
        "workspace/willCreateFiles",
        "workspace/willDeleteFiles",
    }
)
_SNIPPET = 2
_SNIPPET_FORMAT = re.compile(rb'"insertTextFormat"\s*:\s*2(?![0-9])')
_LABEL_DETAILS = re.compile(rb'"labelDetails"')
_DOCUMENT_CHANGES = re.compile(rb'"documentChanges"')
_PLAIN = 1
_MARKDOWN = re.compile(rb'"markdown"')


class ResourceOperationsUnsupported(Exception):
    """A WorkspaceEdit creates, renames or deletes files the client cannot."""


def snippet_text(snippet: str) -> str:
    """The text a snippet inserts with every placeholder left at its default."""
    out, _ = _plain(snippet, 0, nested=False)
    return out


def _plain(s: str, i: int, *, nested: bool) -> tuple[str, int]:
    """Plain text of `s` from `i` up to an unescaped `}` (when nested); return it and where it stopped."""
    out: list[str] = []
    while i < len(s):
        ch = s[i]
        if ch == "\\" and i + 1 < len(s) and s[i + 1] in "$}\\,|":
            out.append(s[i + 1])
            i += 2
        elif ch == "}" and nested:
            return "".join(out), i + 1
        elif ch == "$" and i + 1 < len(s) and (s[i + 1].isalnum() or s[i + 1] == "_"):
            # $1 or $name: a tabstop or variable without default inserts nothing.
            i += 1
            while i < len(s) and (s[i].isalnum() or s[i] == "_"):
                i += 1
        elif ch == "$" and s.startswith("${", i):
            text, i = _placeholder(s, i + 2)
            out.append(text)
        else:
            out.append(ch)
            i += 1
    return "".join(out), i


def _placeholder(s: str, i: int) -> tuple[str, int]:
    """`${1}`, `${1:default}`, `${1|one,two|}`, `${name:default}` from after `${`."""
    while i < len(s) and (s[i].isalnum() or s[i] == "_"):
        i += 1
    if i < len(s) and s[i] == ":":
        return _plain(s, i + 1, nested=True)
    if i < len(s) and s[i] == "|":
        end = s.find("|}", i + 1)
        if end != -1:
            first = s[i + 1 : end].split(",", maxsplit=1)[0]
            return first, end + 2
    end = s.find("}", i)
    return "", (end + 1 if end != -1 else len(s))


def completion_text(snippet: str) -> str:
    """What a server without snippet support would insert: the text before the first tabstop.

    `add(${1:int a}, ${2:int b})` becomes `add`, as clangd and pyright insert
    for such a client; placeholder texts are parameter names, not code.
    """
    i = 0
    while i < len(snippet):
        if snippet[i] == "\\":
            i += 2
            continue
        if snippet[i] == "$" and i + 1 < len(snippet) and (snippet[i + 1].isdigit() or snippet[i + 1] == "{"):
            head = snippet_text(snippet[:i])
            return head.rstrip("(<[{ ") if i + 2 < len(snippet) else head
        i += 1
    return snippet_text(snippet)


def _label_item(item: dict[str, Any]) -> None:
    """Fold labelDetails into the label, as servers do for clients without labelDetailsSupport."""
    details = item.pop("labelDetails", None)
    if isinstance(details, dict) and isinstance(item.get("label"), str):
        item["label"] += str(details.get("detail") or "")


def _plain_item(item: dict[str, Any], default_format: Any) -> None:
    if item.get("insertTextFormat", default_format) != _SNIPPET:
        return
    if isinstance(item.get("insertText"), str):
        item["insertText"] = completion_text(item["insertText"])
    edit = item.get("textEdit")
    if isinstance(edit, dict) and isinstance(edit.get("newText"), str):
        edit["newText"] = completion_text(edit["newText"])
    item["insertTextFormat"] = _PLAIN


def _completion_for(value: Any, caps: dict[str, Any], folds_label_details: bool) -> Any:
    snippets = supports_snippets(caps)
    details = _keeps_label_details(caps, folds_label_details)
    found = value.get("itemDefaults") if isinstance(value, dict) else None
    defaults: dict[str, Any] = found if isinstance(found, dict) else {}
    if isinstance(value, list):
        items = value
    elif isinstance(value, dict) and "label" in value:  # completionItem/resolve: one item
        items = [value]
    elif isinstance(value, dict):
        items = value.get("items") or []
    else:
        return value
    for item in items:
        if not isinstance(item, dict):
            continue
        if not snippets:
            _plain_item(item, defaults.get("insertTextFormat"))
        if not details:
            _label_item(item)
    if not snippets and defaults.get("insertTextFormat") == _SNIPPET:
        defaults["insertTextFormat"] = _PLAIN
    return value


def as_changes(edit: dict[str, Any]) -> dict[str, Any]:
    """A WorkspaceEdit with `documentChanges` turned into a `changes` map (text edits only)."""
    doc_changes = edit.get("documentChanges")
    if not isinstance(doc_changes, list):
        return edit
    changes: dict[str, list[Any]] = {}
    for change in doc_changes:
        if not isinstance(change, dict) or "kind" in change:
            raise ResourceOperationsUnsupported(
                f"the edit {change.get('kind') if isinstance(change, dict) else '?'}s a file"
            )
        uri = (change.get("textDocument") or {}).get("uri")
        if isinstance(uri, str):
            edits = [{k: v for k, v in e.items() if k != "annotationId"} for e in change.get("edits") or []]
            changes.setdefault(uri, []).extend(edits)
    shaped = {k: v for k, v in edit.items() if k not in ("documentChanges", "changeAnnotations")}
    shaped["changes"] = changes
    return shaped


def _edits_in(method: str, value: Any) -> Any:
    """Apply `as_changes` to every WorkspaceEdit in an answer; one with file operations is left as sent."""

    def shape(edit: Any) -> Any:
        if not isinstance(edit, dict):
            return edit
        try:
            return as_changes(edit)
        except ResourceOperationsUnsupported as exc:
            log.info("%s answer left with documentChanges: %s", method, exc)
            return edit

    if method == "textDocument/codeAction" and isinstance(value, list):
        for action in value:
            if isinstance(action, dict) and "edit" in action:
                action["edit"] = shape(action["edit"])
        return value
    if method == "codeAction/resolve" and isinstance(value, dict) and "edit" in value:
        value["edit"] = shape(value["edit"])
        return value
    return shape(value)


def shape_result(
    method: str,
    result: Raw,
    caps: dict[str, Any],
    *,
    edits_follow_caps: bool = True,
    plaintext_hover: Callable[[str], str | None] | None = None,
    folds_label_details: bool = True,
) -> Raw:
    """`result` as the client with capabilities `caps` would have had it from the server alone.

    `edits_follow_caps` is False for a server that answers with `documentChanges`
    whatever the client declared (the adapter knows): its answers pass unchanged.
    `plaintext_hover` is the adapter's rendering of a markdown hover in plaintext
    (None where it does not know it: the markdown is left as it is).
    `folds_label_details` is False for a server that sends labelDetails to every client.
    """
    # Completions come with nearly every keystroke: the capabilities decide first, and the
    # raw bytes are searched in place (no copy) only for a client that lacks something.
    if method in COMPLETION_METHODS and _completion_needs_shaping(result, caps, folds_label_details):
        return ev.encode_value(_completion_for(ev.decode_value(result), caps, folds_label_details))
    if (
        method in EDIT_METHODS
        and edits_follow_caps
        and not supports_document_changes(caps)
        and _DOCUMENT_CHANGES.search(result) is not None
    ):
        return ev.encode_value(_edits_in(method, ev.decode_value(result)))
    if (
        method == HOVER_METHOD
        and plaintext_hover is not None
        and hover_format(caps) == "plaintext"
        and _MARKDOWN.search(result) is not None
    ):
        return _plaintext_hover(result, plaintext_hover)
    return result


def _plaintext_hover(result: Raw, plaintext_hover: Callable[[str], str | None]) -> Raw:
    """A markdown hover with its contents in the server's plaintext; left as it is where that is not known."""
    value = ev.decode_value(result)
    contents = value.get("contents") if isinstance(value, dict) else None
    if not isinstance(contents, dict) or contents.get("kind") != "markdown":
        return result
    if not isinstance(contents.get("value"), str):
        return result
    text = plaintext_hover(contents["value"])
    if text is None:
        log.debug("hover left in markdown: the adapter does not know its plaintext")
        return result
    value["contents"] = {"kind": "plaintext", "value": text}
    return ev.encode_value(value)


def _completion_needs_shaping(raw: Raw, caps: dict[str, Any], folds_label_details: bool) -> bool:
    if not supports_snippets(caps) and _SNIPPET_FORMAT.search(raw) is not None:
        return True
    return not _keeps_label_details(caps, folds_label_details) and _LABEL_DETAILS.search(raw) is not None


def _keeps_label_details(caps: dict[str, Any], folds_label_details: bool) -> bool:
    """Whether the client gets labelDetails as the server sent them."""
    if not folds_label_details:
        return True
    return declared(caps, "textDocument.completion.completionItem.labelDetailsSupport") is True


def edit_for_client(edit: dict[str, Any], caps: dict[str, Any]) -> dict[str, Any]:
    """A `workspace/applyEdit` edit for one client; raises ResourceOperationsUnsupported if it cannot apply it."""
    ops = [c.get("kind") for c in edit.get("documentChanges") or [] if isinstance(c, dict) and "kind" in c]
    allowed = declared(caps, "workspace.workspaceEdit.resourceOperations") or []
    missing = sorted({str(op) for op in ops if op not in allowed})
    if missing and supports_document_changes(caps):
        raise ResourceOperationsUnsupported(f"the client cannot {', '.join(missing)} files")
    if supports_document_changes(caps):
        return edit
    return as_changes(edit)


def flat_symbols(result: Raw, uri: str, caps: dict[str, Any], *, blank_containers: bool = False) -> Raw:
    """A hierarchical documentSymbol answer as the flat SymbolInformation list a client without
    `hierarchicalDocumentSymbolSupport` would have had from the server alone (pre-order, with containerName).

    `blank_containers`: the server names every symbol's container "" in its own flat
    answers (clangd does), rather than the enclosing symbol's name.
    """
    if declared(caps, "textDocument.documentSymbol.hierarchicalDocumentSymbolSupport") is True:
        return result
    if b'"selectionRange"' not in bytes(result):
        return result
    value = ev.decode_value(result)
    if not isinstance(value, list):
        return result
    flat: list[dict[str, Any]] = []
    _flatten(value, None, uri, flat, blank=blank_containers)
    return ev.encode_value(flat)


def _flatten(symbols: list[Any], container: str | None, uri: str, out: list[dict[str, Any]], *, blank: bool) -> None:
    for sym in symbols:
        if not isinstance(sym, dict) or "range" not in sym:
            continue
        info: dict[str, Any] = {"name": sym.get("name", ""), "kind": sym.get("kind", 13)}
        for optional in ("tags", "deprecated"):
            if optional in sym:
                info[optional] = sym[optional]
        info["location"] = {"uri": uri, "range": sym["range"]}
        if blank:
            info["containerName"] = ""
        elif container is not None:
            info["containerName"] = container
        out.append(info)
        _flatten(sym.get("children") or [], str(sym.get("name", "")), uri, out, blank=blank)
