"""clangd's wording of a diagnostic with notes, for a client that cannot take relatedInformation."""

from __future__ import annotations

from typing import Any

from lensmux.adapters.clangd.clangd import ClangdAdapter
from lensmux.adapters.clangd.clangd_wording import fold_related
from lensmux.adapters.spec import ServerConfig

URI = "file:///w/src/intl.c"


def _rng(line: int, start: int, end: int) -> dict[str, Any]:
    return {"start": {"line": line, "character": start}, "end": {"line": line, "character": end}}


# As the shared clangd (told the daemon takes related information) publishes it.
STRUCTURED = {
    "range": _rng(6, 36, 40),
    "severity": 1,
    "code": "-Wimplicit-function-declaration",
    "source": "clang",
    "message": "Call to undeclared function 'twic'; ISO C99 and later do not support implicit function "
    "declarations (fix available)",
    "relatedInformation": [
        {"location": {"uri": URI, "range": _rng(6, 36, 40)}, "message": "Did you mean 'twice'?"},
        {"location": {"uri": "file:///usr/include/x.h", "range": _rng(2, 4, 9)}, "message": "'twice' declared here"},
    ],
}


def test_notes_are_folded_into_the_message_and_main_file_notes_become_diagnostics() -> None:
    shown = [d for d, _ in fold_related(URI, [STRUCTURED])]
    main, note = shown
    # What clangd 22 alone sends eglot and Helix for this error.
    assert main["message"] == (
        "Call to undeclared function 'twic'; ISO C99 and later do not support implicit function declarations "
        "(fix available)\n\nintl.c:7:37: note: did you mean 'twice'?"
        "\n\n/usr/include/x.h:3:5:\nnote: 'twice' declared here"
    )
    assert "relatedInformation" not in main and main["code"] == "-Wimplicit-function-declaration"
    assert note == {
        "range": _rng(6, 36, 40),
        "severity": 3,
        "message": "Did you mean 'twice'?\n\nintl.c:7:37: error: call to undeclared function 'twic'; "
        "ISO C99 and later do not support implicit function declarations",
    }


def test_every_worded_diagnostic_remembers_the_one_it_came_from() -> None:
    plain = {"range": _rng(1, 0, 3), "severity": 2, "message": "Unused variable 'x'"}
    pairs = fold_related(URI, [plain, STRUCTURED])
    assert [server for _, server in pairs] == [plain, STRUCTURED, STRUCTURED]
    assert pairs[0][0] == plain


def test_only_clients_without_related_information_get_the_folded_wording() -> None:
    adapter = ClangdAdapter(ServerConfig(name="clangd", command="clangd"))
    with_related = {"textDocument": {"publishDiagnostics": {"relatedInformation": True}}}
    assert adapter.diagnostics_for_client(URI, [STRUCTURED], with_related) is None
    eglot = {"textDocument": {"publishDiagnostics": {"relatedInformation": False}}}
    assert len(adapter.diagnostics_for_client(URI, [STRUCTURED], eglot) or []) == 2
    assert len(adapter.diagnostics_for_client(URI, [STRUCTURED], {}) or []) == 2


def test_the_quick_check_says_so_for_every_client_the_wording_changes() -> None:
    # A pull answer clangd gave goes undecoded to a client the quick check passes over.
    adapter = ClangdAdapter(ServerConfig(name="clangd", command="clangd"))
    for related in (True, False, None):
        caps = {"textDocument": {"publishDiagnostics": {"relatedInformation": related}}}
        worded = adapter.diagnostics_for_client(URI, [STRUCTURED], caps) is not None
        assert adapter.words_diagnostics_for(caps) == worded, related
