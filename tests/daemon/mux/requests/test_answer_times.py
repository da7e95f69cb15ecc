"""How long a request sent now would wait: the server's answer times, and its queue when it answers in turn."""

from __future__ import annotations

import pytest

from lensmux.daemon.mux.requests.answer_times import AnswerTimes
from lensmux.daemon.mux.requests.pending import PendingTable

pytestmark = [pytest.mark.anyio]

INCOMING = "callHierarchy/incomingCalls"
PREPARE = "textDocument/prepareCallHierarchy"


async def test_a_server_answering_in_turn_makes_a_request_wait_for_the_queue() -> None:
    table = PendingTable()
    times = AnswerTimes(in_turn=True)
    assert times.expected(INCOMING, table.entries()) is None, "nothing known before an answer"
    # Sent together at 0: the second began when the first was answered, at 0.25.
    first, second = table.add_internal(INCOMING), table.add_internal(INCOMING)
    first.started = second.started = 0.0
    times.answered(table.pop(first.server_id) or first, now=0.25)
    times.answered(table.pop(second.server_id) or second, now=0.5)
    # Each took 0.25 s of the server's time, not the second 0.5 s.
    assert times.expected(INCOMING, [], now=1.0) == pytest.approx(0.25)
    # Two queued ahead, the oldest under way for 0.1 s: 0.15 + 0.25 + 0.25 of its own.
    ahead = [table.add_internal(INCOMING), table.add_internal(PREPARE), table.add_internal(INCOMING)]
    for entry in ahead:
        entry.started = 1.0
    assert times.expected(INCOMING, ahead, now=1.1) == pytest.approx(0.65)


async def test_a_server_answering_side_by_side_answers_in_its_own_time() -> None:
    table = PendingTable()
    times = AnswerTimes(in_turn=False)
    entry = table.add_internal(INCOMING)
    entry.started = 0.0
    times.answered(entry, now=0.2)
    queued = [table.add_internal(INCOMING) for _ in range(5)]
    assert times.expected(INCOMING, queued, now=1.0) == pytest.approx(0.2)
