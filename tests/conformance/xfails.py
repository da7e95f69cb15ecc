"""Comparisons lensmux still fails, each with what the first client sees and why.

Key: (server, profile, aspect) as in test_conformance.py. Remove an entry when its fix lands: the
xfail is strict, so a comparison that starts to pass fails the run until its entry is removed.
TIMING lists the entries whose outcome depends on a race between the two clients (seen passing
and failing on the same code); those are not strict.

Empty. The last entries were pyright's cross-file references, added-folder symbols and file
watching next to the busy partner: pyright cancels the Find References it is working on when the
next one arrives, so the partner's requests cut the first client's answers short. The daemon now
sends pyright's references one at a time (daemon/mux/one_at_a_time.py), and fetches the
diagnostics pyright holds back while another client types (daemon/mux/diagnostics_nudge.py).
"""

from __future__ import annotations

XFAILS: dict[tuple[str, str, str], str] = {}

TIMING: frozenset[tuple[str, str, str]] = frozenset()
