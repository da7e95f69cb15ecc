"""Comparisons lensmux still fails, each with what the first client sees and why.

Key: (server, profile, aspect) as in test_conformance.py. Remove an entry when its fix lands: the
xfail is strict, so a comparison that starts to pass fails the run until its entry is removed.
TIMING lists the entries whose outcome depends on a race between the two clients (seen passing
and failing on the same code); those are not strict.

Empty. The last entries were pyright's timing entries (references, workspace_folders and
registrations on every profile) next to the busy partner. The references and added-folder
differences came from the partner's edits and symbol requests, each less than 250 ms after the
last: pyright never enumerated the workspace (or the added folder) and answered from the open
files and their imports. The daemon now holds what would postpone or miss that discovery until
pyright has made it (daemon/mux/discovery.py).
"""

from __future__ import annotations

XFAILS: dict[tuple[str, str, str], str] = {}

TIMING: frozenset[tuple[str, str, str]] = frozenset()
