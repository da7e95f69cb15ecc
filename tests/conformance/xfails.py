"""Comparisons lensmux still fails, each with what the first client sees and why.

Key: (server, profile, aspect) as in test_conformance.py. Remove an entry when its fix lands: the
xfail is strict, so a comparison that starts to pass fails the run until its entry is removed.
TIMING lists the entries whose outcome depends on a race between the two clients (seen passing
and failing on the same code); those are not strict.
"""

from __future__ import annotations

PYRIGHT_PAUSE = (
    "timing: pyright enumerates the workspace only once 250 ms have passed since the last change or request "
    "of any client (a timer every interaction restarts); the busy partner edits about every 220 ms plus its "
    "answers' time, so whether pyright gets such a pause during the session depends on how long those take: "
    "without one, this client's cross-file references, the symbols of its added folder and pyright's file "
    "watching lack the modules pyright has not gone through yet (the same code matched pyright alone in two "
    "whole runs and differed in the references of every profile in others). Diagnostics are not affected any "
    "more: the daemon fetches the ones pyright holds back (daemon/mux/diagnostics_nudge.py)"
)

_PYRIGHT_PROFILES = ("eglot", "helix", "lsp-mode", "neovim-0.10", "neovim-0.7", "vscode")
_PYRIGHT_RACES = ("references", "registrations", "workspace_folders")
_PYRIGHT_TIMED = {(profile, aspect) for profile in _PYRIGHT_PROFILES for aspect in _PYRIGHT_RACES}

XFAILS: dict[tuple[str, str, str], str] = {
    ("pyright", profile, aspect): PYRIGHT_PAUSE for profile, aspect in _PYRIGHT_TIMED
}

TIMING: frozenset[tuple[str, str, str]] = frozenset(("pyright", profile, aspect) for profile, aspect in _PYRIGHT_TIMED)
