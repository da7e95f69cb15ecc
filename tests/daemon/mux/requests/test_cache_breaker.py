"""The response cache's bounds and generations, and the breaker's state machine, in isolation."""

from __future__ import annotations

from daemon.mux.mux_stubs import FakeClock

from lensmux.daemon.config import BreakerConfig
from lensmux.daemon.mux.lifecycle.breaker import BreakerState, CircuitBreaker
from lensmux.daemon.mux.requests.cache import ResponseCache


def _refs(uri: str, line: int = 0) -> dict[str, object]:
    return {"textDocument": {"uri": uri}, "position": {"line": line, "character": 0}}


def test_key_is_canonical_and_ignores_progress_tokens() -> None:
    cache = ResponseCache(1 << 20)
    a = cache.key_for("textDocument/hover", {"textDocument": {"uri": "u"}, "position": {"character": 1, "line": 2}})
    b = cache.key_for(
        "textDocument/hover",
        {"workDoneToken": "t", "position": {"line": 2, "character": 1}, "textDocument": {"uri": "u"}},
    )
    assert a is not None and b is not None and a.key == b.key
    assert cache.key_for("textDocument/completion", _refs("u")) is None
    assert cache.key_for("textDocument/references", {**_refs("u"), "partialResultToken": 1}) is None


def test_generations_invalidate_only_what_a_change_can_affect() -> None:
    cache = ResponseCache(1 << 20)
    symbols_a = cache.key_for("textDocument/documentSymbol", {"textDocument": {"uri": "a"}})
    refs_a = cache.key_for("textDocument/references", _refs("a"))
    assert symbols_a is not None and refs_a is not None
    cache.put(symbols_a, b"[1]", cache.generation_for(symbols_a))
    cache.put(refs_a, b"[2]", cache.generation_for(refs_a))
    cache.document_changed("b")
    # Another document's edit: a's symbols stand, cross-file references do not.
    assert cache.get(symbols_a) == b"[1]" and cache.get(refs_a) is None
    cache.document_changed("a")
    assert cache.get(symbols_a) is None
    cache.put(symbols_a, b"[3]", cache.generation_for(symbols_a))
    cache.workspace_changed()
    assert cache.get(symbols_a) is None


def test_a_result_computed_before_a_change_is_not_stored() -> None:
    cache = ResponseCache(1 << 20)
    key = cache.key_for("textDocument/references", _refs("a"))
    assert key is not None
    sent_at = cache.generation_for(key)
    cache.document_changed("a")  # the edit lands while the request is in flight
    cache.put(key, b"[old]", sent_at)
    assert cache.get(key) is None


def test_the_byte_bound_evicts_least_recently_used() -> None:
    cache = ResponseCache(max_bytes=4 * (1000 + 600))
    keys = [cache.key_for("textDocument/hover", _refs("u", i)) for i in range(10)]
    for key in keys:
        assert key is not None
        cache.put(key, b"x" * 1000, cache.generation_for(key))
    status = cache.status()
    assert status["bytes"] <= 4 * 1600 and status["entries"] < 10
    assert keys[-1] is not None and cache.get(keys[-1]) is not None
    assert keys[0] is not None and cache.get(keys[0]) is None


def _state(breaker: CircuitBreaker) -> BreakerState:
    # A call, so the type checker does not narrow the state across transitions.
    return breaker.state


def test_breaker_opens_fails_fast_probes_and_closes() -> None:
    clock = FakeClock()
    breaker = CircuitBreaker("s@r", BreakerConfig(failure_threshold=3, cooldown=10), clock=clock)
    for _ in range(3):
        assert breaker.allow()
        breaker.record_failure("timeout")
    assert _state(breaker) is BreakerState.OPEN and not breaker.allow()
    assert "s@r" in breaker.rejection() and "timeout" in breaker.rejection()
    clock.now += 10
    assert breaker.allow()  # the single probe
    assert _state(breaker) is BreakerState.HALF_OPEN and not breaker.allow()
    breaker.record_failure("still broken")
    assert _state(breaker) is BreakerState.OPEN
    clock.now += 10
    assert breaker.allow()
    breaker.record_success()
    assert _state(breaker) is BreakerState.CLOSED and breaker.allow()
    assert [t.state for t in breaker.transitions] == ["open", "half-open", "open", "half-open", "closed"]


def test_too_many_restarts_in_the_window_open_the_breaker() -> None:
    clock = FakeClock()
    breaker = CircuitBreaker(
        "s@r", BreakerConfig(failure_threshold=100, restart_limit=3, restart_window=60), clock=clock
    )
    breaker.record_restart("exit 1")
    clock.now += 100  # outside the window
    breaker.record_restart("exit 1")
    breaker.record_restart("exit 1")
    assert _state(breaker) is BreakerState.CLOSED
    breaker.record_restart("exit 1")
    assert _state(breaker) is BreakerState.OPEN and "restarts within" in breaker.reason
