"""pyright's signature help for a client without label offsets or per-signature active parameters.

pyright 1.1.414's SignatureHelpProvider words its answer by two client capabilities, and the
shared pyright is told the daemon has both:

- `signatureInformation.parameterInformation.labelOffsetSupport`: a parameter's label is
  `[start, end]` in the signature's label, else the text there (the same string: pyright
  builds the label by appending each parameter's text, offsets in UTF-16 units);
- `signatureInformation.activeParameterSupport`: with it, the answer's own `activeParameter`
  is the largest parameter count of its signatures (so that each signature's own
  `activeParameter` counts); without it, the active signature's `activeParameter` (absent when
  that signature has none). With no active signature both are the largest count.

And by `signatureInformation.documentationFormat` (the first of markdown and plaintext listed,
else plaintext): a signature's `documentation` is its docstring converted to markdown or to
plaintext (`_formatDocString`), read back here from the markdown as for hovers
(pyright_hover.py); a parameter's is the docstring's line about it as written, the same text
in either kind.
"""

from __future__ import annotations

from typing import Any

import msgspec

from lensmux.adapters.capabilities import declared, markup_kind
from lensmux.adapters.pyright import pyright_hover

_INFO = "textDocument.signatureHelp.signatureInformation"


def for_client(result: bytes, client_caps: dict[str, Any]) -> bytes | None:
    """The answer pyright alone gives this client; None when it is `result` itself."""
    offsets = declared(client_caps, f"{_INFO}.parameterInformation.labelOffsetSupport") is True
    active = declared(client_caps, f"{_INFO}.activeParameterSupport") is True
    plaintext = markup_kind(client_caps, f"{_INFO}.documentationFormat") == "plaintext"
    if offsets and active and not (plaintext and b'"markdown"' in result):
        return None
    try:
        value = msgspec.json.decode(result)
    except msgspec.DecodeError:
        return None
    if not isinstance(value, dict) or not isinstance(value.get("signatures"), list):
        return None
    signatures = value["signatures"]
    if not offsets:
        for signature in signatures:
            _labels_as_text(signature)
    if plaintext:
        for signature in signatures:
            _documentation_as_plaintext(signature)
    if not active:
        index = value.get("activeSignature")
        if isinstance(index, int) and 0 <= index < len(signatures) and isinstance(signatures[index], dict):
            parameter = signatures[index].get("activeParameter")
            if parameter is None:
                value.pop("activeParameter", None)
            else:
                value["activeParameter"] = parameter
    return msgspec.json.encode(value)


def _labels_as_text(signature: Any) -> None:
    if not isinstance(signature, dict) or not isinstance(signature.get("label"), str):
        return
    units = signature["label"].encode("utf-16-le")
    for parameter in signature.get("parameters") or []:
        label = parameter.get("label") if isinstance(parameter, dict) else None
        if isinstance(label, list) and len(label) == 2 and all(isinstance(n, int) for n in label):
            parameter["label"] = units[2 * label[0] : 2 * label[1]].decode("utf-16-le", errors="replace")


def _documentation_as_plaintext(signature: Any) -> None:
    if not isinstance(signature, dict):
        return
    doc = signature.get("documentation")
    if isinstance(doc, dict) and doc.get("kind") == "markdown" and isinstance(doc.get("value"), str):
        signature["documentation"] = {"kind": "plaintext", "value": pyright_hover.plaintext_docstring(doc["value"])}
    for parameter in signature.get("parameters") or []:
        doc = parameter.get("documentation") if isinstance(parameter, dict) else None
        if isinstance(doc, dict) and doc.get("kind") == "markdown":
            doc["kind"] = "plaintext"
