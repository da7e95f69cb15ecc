"""The comparison's own rules for what a client is told: each one a rule that can fail."""

from __future__ import annotations

from conformance.told import one_enumeration_order

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
