"""clangd's Commands for a client without code action literals, made from the literals it gave the daemon."""

from __future__ import annotations

from lensmux.adapters.clangd.clangd import ClangdAdapter
from lensmux.adapters.spec import ServerConfig

CLANGD = ClangdAdapter(ServerConfig(name="clangd", command="clangd"))
EDIT = {"documentChanges": [{"textDocument": {"uri": "file:///c/q.c", "version": 1}, "edits": []}]}
TWEAK = {"command": "clangd.applyTweak", "title": "Extract subexpression to variable", "arguments": [{"tweakID": "X"}]}


def test_a_fix_becomes_apply_fix_with_its_edit_and_a_tweak_its_own_command() -> None:
    actions = [
        {"title": "'twice' declared here", "kind": "quickfix", "edit": EDIT, "isPreferred": True},
        {"title": "Extract subexpression to variable", "kind": "refactor", "command": TWEAK},
        {"title": "both", "kind": "refactor", "command": TWEAK, "edit": EDIT},
        {"title": "neither", "kind": "info"},
    ]
    assert CLANGD.code_actions_as_commands(actions) == [
        {"arguments": [EDIT], "command": "clangd.applyFix", "title": "Apply fix: 'twice' declared here"},
        {**TWEAK, "title": "Extract subexpression to variable"},
    ]
