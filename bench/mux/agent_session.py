"""One agent session as Serena's SolidLSP runs it against pyright, timed from the spawn of its process.

The agent spawns its client process (`pyright-langserver --stdio` of its own, or the
`lensmux client pyright` bridge), initializes with a toolkit's capabilities (no
`window.workDoneProgress`, no `workspace.configuration`, Serena's
initializationOptions), and waits for its ready signal: a `window/logMessage`
matching `Found \\d+ source files?` or a `pyright/endProgress`, at most 60 s (then it
goes on, as Serena does). Then it asks each question on a file it had not opened
(didOpen, request, didClose, as SolidLSP's open_file does) and asks again until the
answer is complete: the reference's locations. It then waits at the `Gate` until
every session of its run has answered (so memory is sampled with all of them alive)
and ends with shutdown and exit.

Serena also sleeps 2 s after its first open before a cross-file request
(`_wait_for_cross_file_references_if_needed`); that fixed pause is the same with
either server and is left out here.
"""

from __future__ import annotations

import logging
import os
import re
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import anyio
from support.lspclient import LspClient, LspClientError, LspResponseError, LspTimeout

from bench.mux.agent_memory import tree_pss_kib, tree_rss_kib
from bench.mux.agent_questions import AgentProject, Question, canonical, summary

log = logging.getLogger(__name__)

READY_LINE = re.compile(r"Found \d+ source files?")
# How long a toolkit waits for the ready signal before it asks anyway (Serena: 60 s).
READY_TIMEOUT = 60.0
REQUEST_TIMEOUT = 120.0
# Between two asks of a question whose answer was not complete yet.
RETRY_PAUSE = 0.25

_SYMBOL_KINDS = {"valueSet": list(range(1, 27))}
# What a toolkit declares: Serena's pyright adapter's capabilities, in substance.
AGENT_CAPABILITIES: dict[str, Any] = {
    "workspace": {
        "workspaceEdit": {"documentChanges": True},
        "didChangeConfiguration": {"dynamicRegistration": True},
        "didChangeWatchedFiles": {"dynamicRegistration": True},
        "symbol": {"dynamicRegistration": True, "symbolKind": _SYMBOL_KINDS},
        "executeCommand": {"dynamicRegistration": True},
    },
    "textDocument": {
        "synchronization": {"dynamicRegistration": True, "willSave": True, "willSaveWaitUntil": True, "didSave": True},
        "hover": {"dynamicRegistration": True, "contentFormat": ["markdown", "plaintext"]},
        "definition": {"dynamicRegistration": True},
        "references": {"dynamicRegistration": True},
        "documentSymbol": {
            "dynamicRegistration": True,
            "symbolKind": _SYMBOL_KINDS,
            "hierarchicalDocumentSymbolSupport": True,
        },
        "publishDiagnostics": {"relatedInformation": True},
    },
}
AGENT_INIT_OPTIONS: dict[str, Any] = {
    "exclude": ["**/__pycache__", "**/.venv", "**/.env", "**/build", "**/dist", "**/.pixi"],
    "reportMissingImports": "error",
}


class Gate:
    """Opens once `count` sessions have arrived (answered or failed); they stop once it is released."""

    def __init__(self, count: int) -> None:
        self._left = count
        self.opened = anyio.Event()
        self.released = anyio.Event()

    def arrive(self) -> None:
        """One session is done asking."""
        self._left -= 1
        if self._left <= 0:
            self.opened.set()

    def release(self) -> None:
        """Let the sessions stop (the coordinator has sampled what it wanted with all of them alive)."""
        self.released.set()


async def wait_ready(client: LspClient, timeout: float = READY_TIMEOUT) -> str | None:
    """The first ready signal's kind ("found" or "endProgress"), or None after `timeout`."""
    seen: list[str] = []

    async def watch(method: str, kind: str, predicate: Callable[[Any], bool] | None, scope: anyio.CancelScope) -> None:
        try:
            await client.wait_notification(method, predicate, timeout=timeout + 1)
        except LspClientError:
            return  # the connection ended: no signal, the next request says why
        seen.append(kind)
        scope.cancel()

    def found(params: Any) -> bool:
        return isinstance(params, dict) and bool(READY_LINE.search(str(params.get("message", ""))))

    with anyio.move_on_after(timeout):
        async with anyio.create_task_group() as tg:
            tg.start_soon(watch, "window/logMessage", "found", found, tg.cancel_scope)
            tg.start_soon(watch, "pyright/endProgress", "endProgress", None, tg.cancel_scope)
    return seen[0] if seen else None


async def ask(client: LspClient, root: Path, question: Question) -> Any:
    """Open the file, send the request, close the file; the result (errors are raised)."""
    uri = await client.open(root / question.path, "python", version=0)
    try:
        return await client.request(question.method, question.params(root), timeout=REQUEST_TIMEOUT)
    finally:
        await client.close(uri)


async def ask_until_complete(
    client: LspClient, root: Path, question: Question, reference: Any, *, spawned: float, deadline: float
) -> dict[str, Any]:
    """Ask until the answer has the reference's locations (or `deadline`); every answer, timed from the spawn."""
    want = canonical(reference)
    asks: list[dict[str, Any]] = []
    complete_s: float | None = None
    while time.monotonic() < deadline:
        try:
            answer = await ask(client, root, question)
        except (LspResponseError, LspTimeout) as exc:
            asks.append({"at_s": round(time.monotonic() - spawned, 3), "error": str(exc)})
            await anyio.sleep(RETRY_PAUSE)
            continue
        at = time.monotonic() - spawned
        complete = canonical(answer) == want
        record: dict[str, Any] = {
            "at_s": round(at, 3),
            "complete": complete,
            "identical": answer == reference,
            "answer": summary(answer),
        }
        if answer != reference:
            record["got"] = answer
        asks.append(record)
        if complete:
            complete_s = at
            break
        await anyio.sleep(RETRY_PAUSE)
    return {"complete_s": None if complete_s is None else round(complete_s, 3), "asks": asks}


async def agent_session(
    name: str,
    argv: Sequence[str],
    project: AgentProject,
    references: Mapping[str, Any],
    *,
    env: Mapping[str, str],
    gate: Gate,
    on_spawn: Callable[[int], None],
    deadline_s: float,
) -> dict[str, Any]:
    """One session from spawn to exit; what it saw and when, in seconds from the spawn."""
    result: dict[str, Any] = {"name": name}
    spawned = time.monotonic()
    result["spawned_at"] = spawned
    arrived = False
    try:
        async with LspClient.over_process(argv, env=env, cwd=project.root, name=name) as client:
            if client.pid is not None:
                on_spawn(client.pid)
            await client.initialize(
                project.root,
                capabilities=AGENT_CAPABILITIES,
                process_id=os.getpid(),
                initialization_options=AGENT_INIT_OPTIONS,
                timeout=READY_TIMEOUT,
            )
            result["initialized_s"] = round(time.monotonic() - spawned, 3)
            signal = await wait_ready(client)
            result["ready_signal"] = signal
            result["ready_s"] = None if signal is None else round(time.monotonic() - spawned, 3)
            deadline = spawned + deadline_s
            result["questions"] = {
                q.label: await ask_until_complete(
                    client, project.root, q, references[q.label], spawned=spawned, deadline=deadline
                )
                for q in project.questions
            }
            result["answered_s"] = round(time.monotonic() - spawned, 3)
            gate.arrive()
            arrived = True
            await gate.released.wait()
            await client.shutdown_and_exit(timeout=30)
    except (LspClientError, OSError) as exc:
        log.warning("%s failed: %s", name, exc)
        result["error"] = f"{type(exc).__name__}: {exc}"
    finally:
        if not arrived:
            gate.arrive()
    result["ended_s"] = round(time.monotonic() - spawned, 3)
    return result


async def settle_reference(
    argv: Sequence[str], project: AgentProject, env: Mapping[str, str], *, pause: float, limit: float
) -> dict[str, Any]:
    """A server of its own's settled answers: after its ready signal, each question until two answers agree."""
    started = time.monotonic()
    out: dict[str, Any] = {"answers": {}, "asks": {}}
    async with LspClient.over_process(argv, env=env, cwd=project.root, name="reference") as client:
        await client.initialize(
            project.root,
            capabilities=AGENT_CAPABILITIES,
            process_id=os.getpid(),
            initialization_options=AGENT_INIT_OPTIONS,
        )
        out["ready_signal"] = await wait_ready(client)
        out["ready_s"] = round(time.monotonic() - started, 3)
        for question in (*project.questions, project.editor_question):
            previous: Any = object()
            asks = 0
            while True:
                if time.monotonic() - started > limit:
                    raise ReferenceUnsettled(f"{question.label}: no two equal answers within {limit} s")
                answer = await ask(client, project.root, question)
                asks += 1
                if answer == previous:
                    break
                previous = answer
                await anyio.sleep(pause)
            out["answers"][question.label] = answer
            out["asks"][question.label] = {"asks": asks, "answer": summary(answer)}
        out["settled_s"] = round(time.monotonic() - started, 3)
        if client.pid is not None:
            # What a server of its own holds having answered every question (the editor's too).
            out["rss_mib_settled"] = round(tree_rss_kib({client.pid}) / 1024, 1)
            out["pss_mib_settled"] = round(tree_pss_kib({client.pid}) / 1024, 1)
        await client.shutdown_and_exit()
    return out


class ReferenceUnsettled(Exception):
    """The reference server never gave the same answer twice."""
