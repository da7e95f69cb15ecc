"""Comparisons today's lensmux fails, each named for the issue 12 point it shows.

Key: (server, profile, aspect) as in test_conformance.py. Remove an entry when its fix lands
(the xfail is strict: a comparison that starts to pass fails the run until it is removed).
"""

from __future__ import annotations

XFAILS: dict[tuple[str, str, str], str] = {}
