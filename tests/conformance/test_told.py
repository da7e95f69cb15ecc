"""The comparison's own rules for what a client is told: each one a rule that can fail."""

from __future__ import annotations

from conformance.told import one_enumeration_order, told_sequence

LOG = "window/logMessage"
CONFIG = [[LOG, 3, "Loading pyproject.toml file at $BASE/proj/pyproject.toml"], [LOG, 3, "Assuming Python 3.11"]]
FOUND = [LOG, 3, "Found 9 source files"]


def test_pyrights_two_orders_for_a_double_initialized_are_one() -> None:
    before = [*CONFIG, *CONFIG, FOUND]  # the second `initialized` came before the enumeration
    after = [*CONFIG, FOUND, *CONFIG, FOUND]  # ... or after it
    assert one_enumeration_order(before) == one_enumeration_order(after) == before


def test_a_count_that_changed_is_still_told() -> None:
    grown = [*CONFIG, FOUND, *CONFIG, [LOG, 3, "Found 10 source files"]]
    assert one_enumeration_order(grown) == grown


def test_a_long_operation_line_is_timing_but_other_lines_are_not() -> None:
    # pyright says "Long operation" only when an analysis crossed its 2 s threshold.
    long = {"type": 4, "message": "[FG] Long operation: analyzing: file:///p/main.py (2143ms)"}
    plain = {"type": 3, "message": "Found 9 source files"}
    assert told_sequence([(LOG, long), (LOG, plain)]) == told_sequence([(LOG, plain)])
    assert told_sequence([(LOG, plain), (LOG, plain)]) != told_sequence([(LOG, plain)])
    # The same words from something else than a log line are still told.
    shown = [("window/showMessage", long)]
    assert told_sequence(shown) != []
