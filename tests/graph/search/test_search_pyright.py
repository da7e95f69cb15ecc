"""Expansion against real pyright: its references and call-hierarchy answers drive the graph.

PyrightStdioGateway is a minimal LspGateway over one pyright process on stdio (the
daemon's real gateway goes through its instances instead). The same process answers
documentSymbol for the index, so symbol ranges are pyright's own, as in production.
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from search_fakes import FakeEmbedder
from search_projects import UPLOADER
from support.lspclient import LspClient, LspResponseError, LspTimeout, uri_path
from support.projects import write_files

from lensmux.graph.index import Indexer
from lensmux.graph.search import (
    GatewayError,
    HybridSearchEngine,
    Overrides,
    SearchConfig,
    SearchRequest,
    SearchResponse,
)

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

PYRIGHT = Path(__file__).resolve().parents[3] / ".venv" / "bin" / "pyright-langserver"
METHOD_NOT_FOUND = -32601
# Generous: pyright analyses the project on the first requests; this test is about answers, not speed.
SLOW = SearchConfig(request_timeout_s=60.0, expansion_budget_s=120.0, anchor_timeout_s=60.0)


class PyrightStdioGateway:
    """LspGateway over one pyright: opens documents on first use, maps errors to GatewayError."""

    def __init__(self, client: LspClient, *, hide: frozenset[str] = frozenset()) -> None:
        self.client = client
        self.hide = hide  # methods answered with "method not found", as an older server would
        self.opened: set[str] = set()
        self.methods: list[str] = []

    def unavailable_reason(self, root: Path, language: str) -> str | None:
        return None if language == "python" else f"no server for {language}"

    def answers_settled(self, root: Path, language: str) -> bool:
        return language == "python"

    async def capabilities(self, root: Path, language: str) -> Mapping[str, Any]:
        assert self.client.initialize_result is not None
        caps: Mapping[str, Any] = self.client.initialize_result["capabilities"]
        return caps

    async def ensure_open(self, uri: str) -> None:
        if uri not in self.opened:
            self.opened.add(uri)
            await self.client.open(uri_path(uri), "python")

    async def request(
        self, root: Path, language: str, method: str, params: Mapping[str, Any], *, timeout: float
    ) -> Any:
        self.methods.append(method)
        if method in self.hide:
            raise GatewayError(f"unhandled method {method}", code=METHOD_NOT_FOUND)
        document = params.get("textDocument") or params.get("item")
        if isinstance(document, Mapping) and isinstance(document.get("uri"), str):
            await self.ensure_open(document["uri"])
        try:
            return await self.client.request(method, dict(params), timeout=timeout)
        except LspResponseError as exc:
            raise GatewayError(exc.message, code=exc.code) from exc
        except LspTimeout as exc:
            raise GatewayError(f"timed out after {timeout} s") from exc

    async def document_symbols(self, path: Path, language_id: str, text: str) -> list[dict[str, Any]] | None:
        """SymbolSource for the indexer, over the same process."""
        if language_id != "python":
            return None
        await self.ensure_open(path.as_uri())
        result = await self.client.request("textDocument/documentSymbol", {"textDocument": {"uri": path.as_uri()}})
        return result if isinstance(result, list) else []


@asynccontextmanager
async def pyright_index(tmp_path: Path) -> AsyncIterator[tuple[Indexer, LspClient]]:
    """UPLOADER indexed with pyright's symbols; yields the index and the live client."""
    root = write_files(tmp_path / "repo", UPLOADER).resolve()
    async with LspClient.over_process([str(PYRIGHT), "--stdio"], cwd=root, name="pyright") as client:
        await client.initialize(root)
        async with Indexer(root, tmp_path / "state", FakeEmbedder(), PyrightStdioGateway(client)) as ix:
            await ix.index_all()
            yield ix, client
        await client.shutdown_and_exit()


async def _search(
    ix: Indexer, gateway: PyrightStdioGateway, query: str, depth: int = 2, *, learn: bool = True
) -> SearchResponse:
    config = dataclasses.replace(SLOW, learn_graph=learn)
    engine = HybridSearchEngine(gateway, embed_query=FakeEmbedder().embed_query, config=config)
    request = SearchRequest(query=query, top_k=30, config_overrides=Overrides(max_graph_depth=depth))
    return await engine.search(request, ix)


def _reasons(response: SearchResponse) -> dict[str, list[str]]:
    return {s.id: s.reasons for s in response.ranked_symbols}


async def test_pyright_answers_build_calls_references_and_inheritance(tmp_path: Path) -> None:
    if not PYRIGHT.exists():
        pytest.skip("pyright is not installed in .venv")
    async with pyright_index(tmp_path) as (ix, client):
        gateway = PyrightStdioGateway(client)
        calls = await _search(ix, gateway, "`backoff_send`")
        classes = await _search(ix, gateway, "`Storage`", depth=1)
        hidden = PyrightStdioGateway(client, hide=frozenset({"callHierarchy/outgoingCalls"}))
        # Not from what the first search learned: this one must ask.
        derived = await _search(ix, hidden, "`backoff_send`", depth=1, learn=False)
    for response in (calls, classes, derived):
        assert not response.degraded, response.warnings
    assert {"textDocument/prepareCallHierarchy", "callHierarchy/incomingCalls", "callHierarchy/outgoingCalls",
            "textDocument/references"} <= set(gateway.methods)  # fmt: skip
    found = _reasons(calls)
    assert found["pkg/uploader.py:Uploader.backoff_send:19"][0] == "anchor:explicit_symbol"
    # outgoingCalls: pyright resolves self.storage.put_object through the declared type.
    assert "expanded:called_by:Uploader.backoff_send" in found["pkg/storage.py:Storage.put_object:6"]
    # incomingCalls, one and two levels up.
    assert "expanded:calls:Uploader.backoff_send" in found["pkg/uploader.py:Uploader.upload:14"]
    assert "expanded:calls:Uploader.upload" in found["pkg/cli.py:run_cli:5"]
    assert not any(s.name == "log" for s in calls.ranked_symbols if s.reasons[0].startswith("expanded:"))
    # references: the subclass names its base in its header; Uploader.__init__ annotates with it.
    by_class = _reasons(classes)
    assert "expanded:inherits:Storage" in by_class["pkg/storage.py:BucketStorage:15"]
    assert "expanded:references:Storage" in by_class["pkg/uploader.py:Uploader.__init__:11"]
    # Without outgoingCalls the callees are derived from the text, confirmed against the index.
    assert "callHierarchy/outgoingCalls" in hidden.methods
    by_text = _reasons(derived)
    assert "expanded:called_by:Uploader.backoff_send:derived" in by_text["pkg/storage.py:Storage.put_object:6"]
    assert "expanded:calls:Uploader.backoff_send" in by_text["pkg/uploader.py:Uploader.upload:14"]
