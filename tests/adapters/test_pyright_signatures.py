"""pyright's signature help for a client without label offsets or active-parameter support (pyright_signatures.py)."""

from __future__ import annotations

from typing import Any

import msgspec

from lensmux.adapters.pyright.pyright_signatures import for_client

LABEL = '(value: str, sep: str = "é😀") -> str'
# As the shared pyright (told the daemon has both capabilities) answers.
SHARED: dict[str, Any] = {
    "signatures": [
        {"label": "(value: int) -> int", "parameters": [{"label": [1, 11]}]},
        {
            "label": LABEL,
            "parameters": [{"label": [1, 11]}, {"label": [13, 29]}],
            "activeParameter": 1,
        },
    ],
    "activeSignature": 1,
    "activeParameter": 2,
}


def _caps(offsets: bool, active: bool) -> dict[str, Any]:
    info: dict[str, Any] = {"activeParameterSupport": active, "parameterInformation": {"labelOffsetSupport": offsets}}
    return {"textDocument": {"signatureHelp": {"signatureInformation": info}}}


def _for(caps: dict[str, Any], shared: Any = SHARED) -> Any:
    out = for_client(msgspec.json.encode(shared), caps)
    return None if out is None else msgspec.json.decode(out)


def test_a_client_with_both_gets_the_answer_untouched() -> None:
    assert _for(_caps(True, True)) is None


def test_labels_become_the_text_at_their_utf16_offsets() -> None:
    out = _for(_caps(False, True))
    assert [p["label"] for p in out["signatures"][1]["parameters"]] == ["value: str", 'sep: str = "é😀"']
    assert out["signatures"][0]["parameters"][0]["label"] == "value: int"
    assert out["activeParameter"] == 2


def test_the_answers_active_parameter_is_the_active_signatures() -> None:
    out = _for(_caps(True, False))
    assert out["activeParameter"] == 1
    assert out["signatures"][1]["parameters"][1]["label"] == [13, 29]
    without = {**SHARED, "signatures": [SHARED["signatures"][0], {"label": LABEL, "parameters": []}]}
    assert "activeParameter" not in _for({}, without)
    no_active_signature = {k: v for k, v in SHARED.items() if k != "activeSignature"}
    assert _for({}, no_active_signature)["activeParameter"] == 2


def test_no_answer_stays_no_answer() -> None:
    assert _for({}, None) is None
