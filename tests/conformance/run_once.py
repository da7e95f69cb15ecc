"""A session-wide cache of expensive runs: each key is run once, on first use."""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class RunOnce(Generic[K, V]):
    """run(key) at most once per test session; a failed run fails every test that asks for it."""

    def __init__(self, run: Callable[[K], V]) -> None:
        self.run = run
        self.done: dict[K, V | BaseException] = {}

    def get(self, key: K) -> V:
        """The run's outcome, running it now if needed."""
        if key not in self.done:
            try:
                self.done[key] = self.run(key)
            except Exception as exc:
                self.done[key] = exc
        outcome = self.done[key]
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome
