"""When `lensmux search` and search_code stop waiting for a root's index and answer from part of it."""

from __future__ import annotations

from lensmux.daemon.cli.connect.index_wait import ready_for_search

RUNNING = {"running": True, "chunks": 40, "focus_left": 0}


def test_a_finished_run_is_ready_whatever_it_holds() -> None:
    assert ready_for_search({"running": False, "chunks": 0}, focused=False, patient=False)


def test_from_a_directory_below_the_root_the_search_waits_for_that_directory_only() -> None:
    assert ready_for_search(RUNNING, focused=True, patient=False)
    assert not ready_for_search({**RUNNING, "focus_left": 3}, focused=True, patient=False)
    assert not ready_for_search({**RUNNING, "focus_left": None}, focused=True, patient=False), "still walking"


def test_from_the_root_the_search_waits_for_the_run_until_its_patience_is_spent() -> None:
    assert not ready_for_search(RUNNING, focused=False, patient=False)
    assert ready_for_search(RUNNING, focused=False, patient=True)


def test_nothing_written_is_never_ready_while_the_run_goes_on() -> None:
    assert not ready_for_search({**RUNNING, "chunks": 0}, focused=True, patient=True)
