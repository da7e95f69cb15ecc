"""The response cache answers repeats without the server and is never stale after a change."""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from support.daemon_proc import DaemonProc, running_daemon
from support.fake_servers import fake_server_config, fake_workspace
from support.lspclient import LspClient, initialized_clients

from lensmux.adapters.registry import adapter_for
from lensmux.daemon.config import load_config
from lensmux.daemon.mux.instance import Instance, InstanceKey

pytestmark = [pytest.mark.anyio]

# The fake server never says it has discovered its workspace; these tests are
# about the cache after the warm-up (tests/daemon/mux/lifecycle/test_warmup.py covers it).
_NO_WARMUP = "[daemon.cache]\nwarmup_quiet = 0.001\n"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A workspace with two text files."""
    return fake_workspace(tmp_path / "ws", {"a.txt": "alpha\nbeta\ngamma\n", "b.txt": "one\ntwo\n"})


@pytest.fixture
def fake(tmp_path: Path) -> Iterator[DaemonProc]:
    """A daemon with the fake server, answers slowed so concurrent requests overlap."""
    with running_daemon(tmp_path / "d", fake_server_config("--slow", "200", extra=_NO_WARMUP)) as daemon:
        yield daemon


def _hover(uri: str, line: int) -> dict[str, Any]:
    return {"textDocument": {"uri": uri}, "position": {"line": line, "character": 0}}


def _refs(uri: str) -> dict[str, Any]:
    position = {"line": 0, "character": 0}
    return {"textDocument": {"uri": uri}, "position": position, "context": {"includeDeclaration": True}}


async def _server_count(client: LspClient, method: str) -> int:
    return sum(1 for m, _ in await client.request("fake/requests") if m == method)


def _cache_stats(daemon: DaemonProc, method: str) -> dict[str, Any]:
    stats: dict[str, Any] = daemon.instances("fake")[0]["cache"]["methods"][method]
    return stats


async def test_repeat_is_answered_from_cache_and_an_edit_makes_it_fresh(fake: DaemonProc, root: Path) -> None:
    async with LspClient.over_process(fake.client_argv("fake")) as client:
        await client.initialize(root)
        uri = await client.open(root / "a.txt", "plaintext")
        first = await client.request("textDocument/hover", _hover(uri, 1))
        assert await client.request("textDocument/hover", _hover(uri, 1)) == first
        assert await _server_count(client, "textDocument/hover") == 1
        stats = _cache_stats(fake, "textDocument/hover")
        assert stats["hits"] == 1 and stats["misses"] == 1 and stats["hit_rate"] == 0.5

        await client.change_incremental(
            uri, 2, {"start": {"line": 1, "character": 0}, "end": {"line": 1, "character": 4}}, "BETA"
        )
        after = await client.request("textDocument/hover", _hover(uri, 1))
        assert "BETA" in str(after) and after != first
        assert await _server_count(client, "textDocument/hover") == 2


async def test_edit_of_another_document_invalidates_cross_file_results(fake: DaemonProc, root: Path) -> None:
    async with LspClient.over_process(fake.client_argv("fake")) as client:
        await client.initialize(root)
        a = await client.open(root / "a.txt", "plaintext")
        b = await client.open(root / "b.txt", "plaintext")
        await client.request("textDocument/references", _refs(a))
        await client.request("textDocument/references", _refs(a))
        assert await _server_count(client, "textDocument/references") == 1
        await client.change_full(b, "changed\n", 2)
        await client.request("textDocument/references", _refs(a))
        assert await _server_count(client, "textDocument/references") == 2


async def test_disk_changes_and_watched_file_events_invalidate(fake: DaemonProc, root: Path) -> None:
    async with LspClient.over_process(fake.client_argv("fake")) as client:
        await client.initialize(root)
        a = await client.open(root / "a.txt", "plaintext")
        await client.request("textDocument/references", _refs(a))
        (root / "b.txt").write_text("rewritten on disk by another program\n")
        with anyio.fail_after(20):
            while await _server_count(client, "textDocument/references") < 2:
                await client.request("textDocument/references", _refs(a))
                await anyio.sleep(0.05)
        await client.notify(
            "workspace/didChangeWatchedFiles", {"changes": [{"uri": (root / "b.txt").as_uri(), "type": 2}]}
        )
        await client.request("textDocument/references", _refs(a))
        assert await _server_count(client, "textDocument/references") == 3


async def test_identical_concurrent_requests_reach_the_server_once(fake: DaemonProc, root: Path) -> None:
    clients = initialized_clients(fake.client_argv("fake"), root, "a", "b")
    async with clients as (a, b):
        uri = await a.open(root / "a.txt", "plaintext")
        await b.open(root / "a.txt", "plaintext")
        answers: list[Any] = []

        async def ask(client: LspClient) -> None:
            answers.append(await client.request("textDocument/hover", _hover(uri, 2)))

        async with anyio.create_task_group() as tg:
            for client in (a, b, a, b):
                tg.start_soon(ask, client)
        assert len(answers) == 4 and all(ans == answers[0] for ans in answers)
        assert "gamma" in str(answers[0])
        assert await _server_count(a, "textDocument/hover") == 1


async def test_no_stale_answer_across_a_random_edit_sequence(tmp_path: Path, root: Path) -> None:
    """The fake's hover reports the server's current line; the cache must never answer an older one."""
    rng = random.Random(1234)
    with running_daemon(tmp_path / "d", fake_server_config(extra=_NO_WARMUP)) as daemon:
        clients = initialized_clients(daemon.client_argv("fake"), root, "a", "b")
        async with clients as (a, b):
            lines = ["alpha", "beta", "gamma"]
            uri = await a.open(root / "a.txt", "plaintext", text="\n".join(lines) + "\n")
            await b.open(root / "a.txt", "plaintext", text="\n".join(lines) + "\n")
            versions = {"a": 1, "b": 1}
            for step in range(150):
                editor, name = (a, "a") if rng.random() < 0.5 else (b, "b")
                if rng.random() < 0.4:
                    line = rng.randrange(len(lines))
                    new = f"{lines[line]}{step}"
                    versions[name] += 1
                    start, end = {"line": line, "character": 0}, {"line": line, "character": len(lines[line])}
                    await editor.change_incremental(uri, versions[name], {"start": start, "end": end}, new)
                    lines[line] = new
                    # The next read is on the same connection as the edit, so it is ordered after it.
                    reader = editor
                else:
                    reader = editor
                line = rng.randrange(len(lines))
                answer = await reader.request("textDocument/hover", _hover(uri, line))
                assert f"\n{lines[line]}\n" in answer["contents"]["value"], (step, line, lines, answer)
            stats = daemon.instances("fake")[0]["cache"]["methods"]["textDocument/hover"]
            assert stats["hits"] > 0  # the sequence did exercise the cache


async def test_cross_file_results_are_not_cached_while_clangd_indexes(tmp_path: Path) -> None:
    config = load_config(tmp_path / "none.toml")
    cfg = config.servers["clangd"]
    instance = Instance(InstanceKey("clangd", cfg.fingerprint(), tmp_path), cfg, adapter_for(cfg), config.daemon)
    # A fresh server is warming: nothing cross-file is stored yet.
    assert not instance.caching_allowed("textDocument/references")
    instance.adapter.observe_progress("backgroundIndexProgress", {"kind": "begin", "title": "indexing"})
    assert not instance.caching_allowed("textDocument/references")
    assert not instance.caching_allowed("workspace/symbol")
    assert instance.caching_allowed("textDocument/documentSymbol")
    instance.adapter.observe_progress("backgroundIndexProgress", {"kind": "end"})
    assert instance.caching_allowed("textDocument/references")
