"""`[daemon.embedding] query_adapter`: a daemon answers with the adapter on, and it moves only the query side."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from support.daemon_proc import running_daemon
from support.projects import write_py_project

pytestmark = [pytest.mark.slow]

QUERY = "multiply a value by adding it repeatedly"


def _search_with(base: Path, project: Path, adapter: bool) -> tuple[dict[str, Any], dict[str, Any], str]:
    config = f"[daemon.embedding]\nquery_adapter = {'true' if adapter else 'false'}\n"
    with running_daemon(base, config) as daemon:
        result = daemon.run_cli("index", str(project), "--wait", "--json", timeout=600)
        assert result.returncode == 0, result.stderr
        response: dict[str, Any] = daemon.call(
            "lensmux/hybridSearch", {"query": QUERY, "root": str(project)}, timeout=120
        )
        model: dict[str, Any] = daemon.status()["index"]["model"]
        shown = daemon.run_cli("status")
        assert shown.returncode == 0, shown.stderr
    return response, model, shown.stdout


def _vector_reasons(response: dict[str, Any]) -> dict[str, str]:
    return {
        s["id"]: r for s in response["ranked_symbols"] for r in s["reasons"] if re.match(r"seed:vector:[-0-9.]+$", r)
    }


def test_the_daemon_searches_with_the_adapter_and_without_it(tmp_path: Path) -> None:
    project = write_py_project(tmp_path / "pyproj")
    on, on_model, on_shown = _search_with(tmp_path / "on", project, adapter=True)
    off, off_model, off_shown = _search_with(tmp_path / "off", project, adapter=False)
    assert on["degraded"] is False and off["degraded"] is False, (on["warnings"], off["warnings"])
    assert on_model["query_adapter"].startswith("all-MiniLM-L6-v2 r"), on_model
    assert off_model["query_adapter"] == "off"
    assert f"query adapter: {on_model['query_adapter']}" in on_shown
    assert "query adapter: off" in off_shown
    assert "scale" in [s["name"] for s in on["ranked_symbols"]]
    # Same index, same chunks: only the query vector, and so the cosines, differ.
    assert {s["id"] for s in on["ranked_symbols"]} & {s["id"] for s in off["ranked_symbols"]}
    assert _vector_reasons(on) != _vector_reasons(off)
