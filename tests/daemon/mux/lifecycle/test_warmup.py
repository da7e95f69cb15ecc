"""The warm-up boundary of the response cache, in isolation: when cross-file answers may be stored."""

from __future__ import annotations

from pathlib import Path

from daemon.mux.mux_stubs import FakeClock

from lensmux.adapters.base import Adapter
from lensmux.adapters.registry import adapter_for
from lensmux.adapters.spec import ServerConfig
from lensmux.daemon.config import load_config
from lensmux.daemon.mux.lifecycle.warmup import Warmup
from lensmux.daemon.mux.requests.cache import CacheKey, ResponseCache


def _refs_key(cache: ResponseCache) -> CacheKey:
    key = cache.key_for(
        "textDocument/references", {"textDocument": {"uri": "file:///a.py"}, "position": {"line": 0, "character": 0}}
    )
    assert key is not None
    return key


def _log(message: str) -> bytes:
    return b'{"type":3,"message":"' + message.encode() + b'"}'


def test_pyright_is_warming_until_it_has_enumerated_the_workspace(tmp_path: Path) -> None:
    pyright = adapter_for(load_config(tmp_path / "none.toml").servers["pyright"])
    cache = ResponseCache(1 << 20)
    warmup = Warmup("pyright@test", pyright, cache, quiet_s=3.0, clock=FakeClock())
    warmup.restart()
    # No progress at all (pyright in openFilesOnly mode reports none): still warming.
    assert warmup.busy()
    # Its per-request progress is not the end of anything.
    pyright.observe_progress("t1", {"kind": "begin", "title": "Finding references"})
    pyright.observe_progress("t1", {"kind": "end"})
    assert warmup.busy()
    generation = cache.workspace_generation
    pyright.observe_notification("window/logMessage", _log("Found 202 source files"))
    assert not warmup.busy()
    # Anything computed (or in flight) before the boundary has an older generation.
    assert cache.workspace_generation > generation
    # Workspace analysis (an untitled progress) stops storing again, and its end bumps.
    pyright.observe_progress("a", {"kind": "begin", "title": ""})
    assert warmup.busy()
    generation = cache.workspace_generation
    pyright.observe_progress("a", {"kind": "end"})
    assert not warmup.busy()
    assert cache.workspace_generation > generation


def test_a_restart_starts_cold_and_forgets_cached_answers(tmp_path: Path) -> None:
    pyright = adapter_for(load_config(tmp_path / "none.toml").servers["pyright"])
    cache = ResponseCache(1 << 20)
    warmup = Warmup("pyright@test", pyright, cache, quiet_s=3.0, clock=FakeClock())
    pyright.observe_notification("window/logMessage", _log("Found 1 source file"))
    assert not warmup.busy()
    key = _refs_key(cache)
    cache.put(key, b"[]", cache.generation_for(key))
    assert cache.get(key) == b"[]"
    warmup.restart()
    assert cache.get(key) is None
    assert warmup.busy()


def test_a_server_without_a_signal_is_warm_after_a_quiet_period() -> None:
    generic = Adapter(ServerConfig(name="quiet", command="quiet-ls"))
    clock = FakeClock()
    cache = ResponseCache(1 << 20)
    warmup = Warmup("quiet@test", generic, cache, quiet_s=3.0, clock=clock)
    warmup.restart()
    assert warmup.busy()
    clock.now += 2.0
    warmup.saw_progress()
    clock.now += 2.0
    # Progress restarts the quiet period.
    assert warmup.busy()
    clock.now += 1.5
    generation = cache.workspace_generation
    assert not warmup.busy()
    assert cache.workspace_generation > generation


def test_pyright_with_quiet_logging_falls_back_to_the_quiet_period(tmp_path: Path) -> None:
    base = load_config(tmp_path / "none.toml").servers["pyright"]
    settings = {"python": {"analysis": {"logLevel": "Error"}}}
    pyright = adapter_for(ServerConfig(name="pyright", command=base.command, adapter="pyright", settings=settings))
    clock = FakeClock()
    warmup = Warmup("pyright@test", pyright, ResponseCache(1 << 20), quiet_s=3.0, clock=clock)
    warmup.restart()
    assert warmup.busy()
    clock.now += 3.0
    assert not warmup.busy()
