"""Comparisons lensmux still fails, each with what the first client sees and why.

Key: (server, profile, aspect) as in test_conformance.py. Remove an entry when its fix lands: the
xfail is strict, so a comparison that starts to pass fails the run until its entry is removed.
TIMING lists the entries whose outcome depends on a race between the two clients (seen passing
and failing on the same code); those are not strict.
AGENT_XFAILS and AGENT_TIMING are the same for test_agents.py, keyed by (server, agent profile,
aspect): they hold for every agent of that profile in the crowd.
"""

from __future__ import annotations

import pytest

XFAILS: dict[tuple[str, str, str], str] = {}

TIMING: frozenset[tuple[str, str, str]] = frozenset()

# -- agents among many clients (test_agents.py): (server, agent profile, aspect) -> reason ---------

AGENT_XFAILS: dict[tuple[str, str, str], str] = {}
AGENT_TIMING: frozenset[tuple[str, str, str]] = frozenset()


def xfail_marks(
    key: tuple[str, str, str], reasons: dict[tuple[str, str, str], str], timing: frozenset[tuple[str, str, str]]
) -> list[pytest.MarkDecorator]:
    """The xfail mark of one comparison, if it is a known failure.

    Strict: a fix makes the comparison pass, and the entry must then go. Only where today's
    failure depends on timing (`timing`) is a pass tolerated.
    """
    reason = reasons.get(key)
    return [pytest.mark.xfail(strict=key not in timing, reason=reason)] if reason else []
