"""pyright's completion documentation in plaintext from its markdown (the shapes of completionProvider.ts)."""

from __future__ import annotations

import msgspec
import pytest

from lensmux.adapters.pyright.pyright_completion_docs import for_client, plaintext_documentation

PLAIN_CLIENT = {"textDocument": {"completion": {"completionItem": {"documentationFormat": ["plaintext"]}}}}
MARKDOWN_CLIENT = {"textDocument": {"completion": {"completionItem": {"documentationFormat": ["markdown"]}}}}


@pytest.mark.parametrize(
    ("markdown", "plaintext"),
    [
        # Seen from pyright 1.1.414 (tests/integration/test_completion_docs.py).
        (
            "```python\ndef f(\n    a: int\n) -> int\n```\n---\nScales a value\\_name by \\*x\\* &lt;t&gt;.",
            "def f(\n    a: int\n) -> int\n\nScales a value_name by *x* <t>.",
        ),
        ("```python\nx: int\n```", "x: int"),
        ("```\nfrom m import f\n```\n\n```python\nf: int\n```", "from m import f\n\nf: int"),
        ("```\nfrom m import f\n```", "from m import f"),
        ("```\nfrom m import f\n```\n\n---\nDoc.", "from m import f\n\n\nDoc."),
        ("---\nDoc \\*x\\*.", "\nDoc *x*."),
    ],
)
def test_pyright_parts_come_back(markdown: str, plaintext: str) -> None:
    assert plaintext_documentation(markdown) == plaintext


def test_a_module_docstring_alone_is_read_back_only_for_a_module_item() -> None:
    assert plaintext_documentation("The \\*demo\\* package.", module=True) == "The *demo* package."
    assert plaintext_documentation("The \\*demo\\* package.") is None


def test_only_a_plaintext_client_with_markdown_in_the_answer_is_rewritten() -> None:
    item = {"label": "f", "kind": 3, "documentation": {"kind": "markdown", "value": "```python\nf: int\n```"}}
    raw = msgspec.json.encode({"isIncomplete": False, "items": [item]})
    assert for_client(raw, MARKDOWN_CLIENT) is None
    assert for_client(raw, {}) is not None  # no format declared: plaintext
    shaped = msgspec.json.decode(for_client(raw, PLAIN_CLIENT) or b"")
    assert shaped["items"][0]["documentation"] == {"kind": "plaintext", "value": "f: int"}
    resolved = msgspec.json.decode(for_client(msgspec.json.encode(item), PLAIN_CLIENT) or b"")
    assert resolved["documentation"] == {"kind": "plaintext", "value": "f: int"}
