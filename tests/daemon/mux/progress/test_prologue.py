"""A client that joins a running server is told what the server said while starting, once, as it holds now."""

from __future__ import annotations

import json
from typing import Any

from daemon.mux.mux_stubs import StubClient

from lensmux.adapters.base import Adapter
from lensmux.adapters.pyright.pyright import PyrightAdapter
from lensmux.adapters.spec import ServerConfig
from lensmux.daemon.mux.progress.prologue import MAX_NOTIFICATIONS, CreateToken, Greeting, Prologue
from lensmux.daemon.wire import envelope as ev

PYRIGHT = PyrightAdapter(ServerConfig(name="pyright", command="pyright-langserver"))
PLAIN = Adapter(ServerConfig(name="plain", command="plain"))


def _log(text: str) -> tuple[str, bytes, bytes]:
    params = ev.encode_value({"type": 3, "message": text})
    return "window/logMessage", bytes(params), ev.notification("window/logMessage", params)


def _said(prologue: Prologue, text: str) -> None:
    prologue.notification(*_log(text))


def _texts(part: list[Any]) -> list[Any]:
    out: list[Any] = []
    for item in part:
        if isinstance(item, CreateToken):
            out.append(("create", item.token))
            continue
        message = json.loads(item)
        params = message.get("params")
        if message["method"] == "window/logMessage":
            out.append(params["message"])
        elif message["method"] == "$/progress":
            out.append((params["value"]["kind"], params["value"].get("message")))
        else:
            out.append((message["method"], params))
    return out


def _greet(prologue: Prologue, *, progress: bool = True) -> Greeting:
    return prologue.greeting(lambda method: True, progress)


def test_a_joiner_hears_the_start_up_around_its_initialize_result() -> None:
    prologue = Prologue("p", PYRIGHT.restatement_key)
    _said(prologue, "Pyright language server 1.1.414 starting")
    prologue.answered_initialize = True
    _said(prologue, "Loading pyproject.toml file at /p/pyproject.toml")
    _said(prologue, "Found 3 source files")
    greeting = _greet(prologue)
    assert _texts(greeting.before_result) == ["Pyright language server 1.1.414 starting"]
    assert _texts(greeting.after_result) == ["Loading pyproject.toml file at /p/pyproject.toml", "Found 3 source files"]
    assert greeting.follows == []


def test_after_warm_up_a_restatement_replaces_its_line_and_anything_else_is_not_kept() -> None:
    prologue = Prologue("p", PYRIGHT.restatement_key)
    prologue.answered_initialize = True
    _said(prologue, "Found 3 source files")
    prologue.close()
    _said(prologue, "Found 4 source files")
    _said(prologue, "Long operation: checking (2200ms)")
    assert _texts(_greet(prologue).after_result) == ["Found 4 source files"]
    # pyright's other wording of the same statement still restates it.
    _said(prologue, "No source files found.")
    assert _texts(_greet(prologue).after_result) == ["No source files found."]


def test_numbers_alone_make_no_new_statement_for_any_server() -> None:
    prologue = Prologue("p", PLAIN.restatement_key)
    prologue.answered_initialize = True
    method = "experimental/serverStatus"
    status = ev.encode_value({"health": "ok", "quiescent": True, "message": "indexed 12 crates"})
    prologue.notification(method, bytes(status), ev.notification(method, status))
    prologue.close()
    later = ev.encode_value({"health": "ok", "quiescent": True, "message": "indexed 40 crates"})
    prologue.notification(method, bytes(later), ev.notification(method, later))
    [only] = _texts(_greet(prologue).after_result)
    assert only == ("experimental/serverStatus", {"health": "ok", "quiescent": True, "message": "indexed 40 crates"})


def test_background_progress_keeps_create_begin_latest_report_and_end_in_order() -> None:
    prologue = Prologue("p", PLAIN.restatement_key)
    prologue.answered_initialize = True
    prologue.progress_created("idx")
    prologue.progress("idx", {"kind": "begin", "title": "indexing", "percentage": 0}, [])
    _said(prologue, "between")
    for n in range(1, 6):
        prologue.progress("idx", {"kind": "report", "message": f"{n}/7"}, [])
    assert _texts(_greet(prologue).after_result) == [
        ("create", "idx"),
        ("begin", None),
        "between",
        ("report", "5/7"),
    ]
    assert _greet(prologue).follows == ["idx"], "a joiner of a running progress must get its live reports and end"
    prologue.progress("idx", {"kind": "end"}, [])
    greeting = _greet(prologue)
    assert _texts(greeting.after_result)[-1] == ("end", None)
    assert greeting.follows == []


def test_progress_that_begins_after_warm_up_is_not_a_start_up_message() -> None:
    prologue = Prologue("p", PLAIN.restatement_key)
    prologue.close()
    prologue.progress_created("later")
    prologue.progress("later", {"kind": "begin", "title": ""}, [])
    assert len(prologue) == 0
    assert not prologue.follows("later")


def test_a_client_without_window_progress_gets_the_servers_own_fallback_or_nothing() -> None:
    prologue = Prologue("p", PYRIGHT.restatement_key)
    prologue.answered_initialize = True
    prologue.progress_created("a")
    begin = ev.notification("pyright/beginProgress", ev.encode_value([None]))
    prologue.progress("a", {"kind": "begin", "title": ""}, [begin])
    assert _texts(_greet(prologue, progress=False).after_result) == [("pyright/beginProgress", [None])]


def test_pyright_says_its_analysis_progress_in_its_own_words_to_a_client_without_window_progress() -> None:
    adapter = PyrightAdapter(ServerConfig(name="pyright", command="pyright-langserver"))
    begin = {"kind": "begin", "title": ""}
    assert adapter.progress_notifications("t", begin) == [("pyright/beginProgress", [None])]
    adapter.observe_progress("t", begin)
    report = {"kind": "report", "message": "3 files to analyze"}
    assert adapter.progress_notifications("t", report) == [("pyright/reportProgress", ["3 files to analyze"])]
    assert adapter.progress_notifications("t", {"kind": "end"}) == [("pyright/endProgress", [None])]
    # "Finding references" belongs to a request: such a client never hears of it.
    refs = {"kind": "begin", "title": "Finding references"}
    assert adapter.progress_notifications("r", refs) == []
    adapter.observe_progress("r", refs)
    assert adapter.progress_notifications("r", {"kind": "end"}) == []


def test_a_server_that_logs_without_end_while_warming_is_cut_but_keeps_its_progress() -> None:
    prologue = Prologue("p", PLAIN.restatement_key)
    for n in range(MAX_NOTIFICATIONS + 50):
        _said(prologue, f"trace line {n}")
    prologue.progress_created("idx")
    prologue.progress("idx", {"kind": "begin", "title": "indexing"}, [])
    greeting = _greet(prologue)
    said = _texts(greeting.before_result)
    assert said[:MAX_NOTIFICATIONS] == [f"trace line {n}" for n in range(MAX_NOTIFICATIONS)]
    assert said[MAX_NOTIFICATIONS:] == [("create", "idx"), ("begin", None)]
    assert prologue.status()["cut"] is True
    assert greeting.follows == ["idx"]


def test_a_new_process_starts_a_new_prologue() -> None:
    prologue = Prologue("p", PLAIN.restatement_key)
    _said(prologue, "old process")
    prologue.close()
    prologue.reset()
    assert prologue.open and len(prologue) == 0
    assert _greet(prologue).before_result == []


def test_the_greeting_is_sent_in_order_with_its_create_requests() -> None:
    prologue = Prologue("p", PLAIN.restatement_key)
    prologue.answered_initialize = True
    _said(prologue, "one")
    prologue.progress_created("idx")
    client = StubClient(1)
    Prologue.send(client, _greet(prologue).after_result)  # type: ignore[arg-type]
    assert [m["method"] for m in client.messages] == ["window/logMessage", "window/workDoneProgress/create"]
    assert client.messages[1]["params"] == {"token": "idx"}
