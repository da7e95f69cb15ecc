"""Comparisons lensmux still fails, each with what the first client sees and why.

Key: (server, profile, aspect) as in test_conformance.py. Remove an entry when its fix lands: the
xfail is strict, so a comparison that starts to pass fails the run until its entry is removed.
TIMING lists the entries whose outcome depends on a race between the two clients (seen passing
and failing in the same run on this code); those are not strict.

Empty: every aspect of every (server, profile) pair matches the server alone. The last entries
went with the fixes they named: clangd's diagnostic wording and flat symbols per client, pyright's
pull registration for VS Code, and withheld cancels joined instead of re-run (the busy partner's
cancelled Find References had kept the shared pyright too busy to analyse, which made pushed
diagnostics, cross-file references, added-folder symbols and registrations differ by timing).
"""

from __future__ import annotations

XFAILS: dict[tuple[str, str, str], str] = {}

TIMING: frozenset[tuple[str, str, str]] = frozenset()
