"""Comparisons lensmux still fails, each with what the first client sees and why.

Key: (server, profile, aspect) as in test_conformance.py. Remove an entry when its fix lands: the
xfail is strict, so a comparison that starts to pass fails the run until its entry is removed.
TIMING lists the entries whose outcome depends on a race between the two clients (seen passing
and failing in the same run on this code); those are not strict.
"""

from __future__ import annotations

PYRIGHT_WARMUP = (
    "timing: pyright analyses (diagnostics, workspace discovery, the symbols of an added folder) only once 250 ms "
    "have passed since the last request or change of any client; the busy partner edits and asks every ~220 ms, so "
    "whether this client's pushed diagnostics, cross-file references, added-folder symbols and file-watching "
    "registrations match pyright alone depends on when the partner's rounds leave such a gap"
)

REFRESH = (
    "timing: a refresh request (workspace/semanticTokens/refresh) reached this client, which never declared "
    "refreshSupport for it (seen once)"
)

_PYRIGHT_PROFILES = ("eglot", "helix", "lsp-mode", "neovim-0.10", "neovim-0.7", "vscode")
_PYRIGHT_RACES = ("diagnostics", "notifications", "references", "registrations", "workspace_folders")
# VS Code pulls, and pyright answers a pull by analysing at once: no race there.
_PYRIGHT_TIMED = {
    (profile, aspect)
    for profile in _PYRIGHT_PROFILES
    for aspect in _PYRIGHT_RACES
    if (profile, aspect) != ("vscode", "diagnostics")
}

XFAILS: dict[tuple[str, str, str], str] = {
    ("clangd", "neovim-0.7", "registrations"): REFRESH,
    **{("pyright", profile, aspect): PYRIGHT_WARMUP for profile, aspect in _PYRIGHT_TIMED},
}

TIMING: frozenset[tuple[str, str, str]] = frozenset(
    {("clangd", "neovim-0.7", "registrations")} | {("pyright", profile, aspect) for profile, aspect in _PYRIGHT_TIMED}
)
