"""The scripted agent session: what an AI agent's LSP client does in one short session.

Played over an already-connected client with an agent profile's habits: initialize with its
params (`initialized` twice where the agent does), wait for its ready signal (bounded: a shared
run waits at most as long as the direct run needed plus a margin, and records that the signal
never came), then requests on files on disk (symbols, hover, definition, cross-file references),
opened around each request, opened once and kept, or never opened, as the agent does; then a
burst of the same kinds of request all at once across files; then shutdown and exit.
Everything the client receives is recorded: answers, and what it is told besides (told.py).
"""

from __future__ import annotations

import re
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
from support.lspclient import LspClient, LspClientError, LspTimeout, path_uri, uri_path

from conformance.agent_plans import ASPECT, REFERENCES, AgentPlan, Ask
from conformance.checks import record_registrations
from conformance.positions import lsp_position, negotiated_encoding, position_of, to_code_points
from conformance.profiles import Profile, ReadySignal
from conformance.session import answer_like_an_editor, settle
from conformance.told import LOG, TOLD, before_first_answer, record_told, told_sequence
from conformance.transcript import Transcript, outcome, sorted_unique

PUSHED = "textDocument/publishDiagnostics"
NOT_KINDS = frozenset({"workspace/configuration", "client/registerCapability", "client/unregisterCapability"})


class AgentSession:
    """One agent session over a connected client; `ready_limit` bounds the wait for its ready signal."""

    def __init__(
        self, client: LspClient, plan: AgentPlan, profile: Profile, root: Path, *, ready_limit: float | None = None
    ) -> None:
        self.client = client
        self.plan = plan
        self.server = plan.case.name
        self.profile = profile
        self.root = root
        self.ready_limit = ready_limit
        self.transcript = Transcript(root.parent)
        self.encoding = "utf-16"
        self.ready_wait = 0.0  # how long the wait for the ready signal took (the shared run's bound)
        self.holders: dict[str, int] = {}  # uri -> requests of this session using the open document
        self.kept: set[str] = set()
        self.locks: dict[str, anyio.Lock] = {}
        answer_like_an_editor(client)
        if profile.habits.configuration_answer == "one-empty-object":
            client.on_server_request("workspace/configuration", lambda params: [{}])

    async def run(self) -> Transcript:
        """Play the whole session, shutdown and exit included; returns the transcript."""
        await self.initialize()
        await self.wait_until_ready()
        for ask in self.plan.steps:
            self.transcript.record(ASPECT[ask.method], ask.label, await self.answer(ask))
        await self.burst()
        await self.finish()
        return self.transcript

    # -- start ------------------------------------------------------------------------

    async def initialize(self) -> None:
        """`initialize` with the profile's params, `initialized` (twice where the agent sends it twice)."""
        params = self.profile.initialize_params(self.server, self.root)
        self.client.workspace_folders = params.get("workspaceFolders")
        pending = await self.client.start_request("initialize", params)
        result = await pending.result(timeout=120)
        self.client.initialize_result = result
        await self.client.notify("initialized", {})
        if self.profile.habits.initialized_twice:
            await self.client.notify("initialized", {})
        self.encoding = negotiated_encoding(result)
        caps = {k: v for k, v in result["capabilities"].items() if k != "positionEncoding"}
        self.transcript.record("initialize", "capabilities", caps)
        self.transcript.record("initialize", "serverInfo", result.get("serverInfo"))
        told = before_first_answer(self.client, pending.id)
        self.transcript.record("startup", "told before the InitializeResult", told)

    async def wait_until_ready(self) -> None:
        """Wait for the profile's ready signal (bounded), or pause as the agent does."""
        signal = self.profile.habits.ready_for(self.server)
        if not signal.waits:
            await anyio.sleep(signal.sleep)
            return
        limit = signal.timeout if self.ready_limit is None else min(signal.timeout, self.ready_limit)
        started = time.monotonic()
        came: int | None = None
        with anyio.move_on_after(limit):
            while (came := _ready_at(self.client.notifications, signal)) is None:
                await anyio.sleep(0.05)
        self.ready_wait = time.monotonic() - started
        self.transcript.record("startup", "ready signal received", came is not None)
        upto = self.client.notifications[: came + 1] if came is not None else self.client.notifications
        self.transcript.record("startup", "told up to the ready signal", told_sequence(upto))

    # -- requests -----------------------------------------------------------------------

    @asynccontextmanager
    async def holding(self, rel: str) -> AsyncIterator[str]:
        """The document of rel, opened as the agent opens files before asking (if it does)."""
        path = self.root / rel
        uri = path_uri(path)
        habit = self.profile.habits.opens
        # One open and one close per file however many requests of the burst use it, and no
        # request before its file's didOpen has been sent (an agent's buffer refcount does so).
        lock = self.locks.setdefault(uri, anyio.Lock())
        async with lock:
            if habit != "never" and self.holders.get(uri, 0) == 0 and uri not in self.kept:
                language = self.profile.habits.language_id.get(self.server, self.plan.case.language_id)
                await self.client.open(path, language, version=self.profile.habits.open_version)
                if habit == "keep":
                    self.kept.add(uri)
            self.holders[uri] = self.holders.get(uri, 0) + 1
        try:
            yield uri
        finally:
            async with lock:
                self.holders[uri] -= 1
                if habit == "around" and self.holders[uri] == 0:
                    await self.client.close(uri)

    async def answer(self, ask: Ask) -> Any:
        """Ask one request as the agent does; the normalised outcome."""
        async with self.holding(ask.rel) as uri:
            text = (self.root / ask.rel).read_text(encoding="utf-8")
            params: dict[str, Any] = {"textDocument": {"uri": uri}}
            if ask.needle:
                params["position"] = lsp_position(text, position_of(text, ask.needle), self.encoding)
            if ask.method == REFERENCES:
                params["context"] = {"includeDeclaration": True}
            if ask.complete_with:
                await self._until_found(params, path_uri(self.root / ask.complete_with))
            result: Any = None
            error: LspClientError | None = None
            try:
                result = await self.client.request(ask.method, params, timeout=60)
            except LspClientError as exc:
                error = exc
        shown = to_code_points(result, self.encoding, _disk_text, uri)
        if ask.method == REFERENCES and isinstance(shown, list):
            shown = sorted_unique(shown)
        return outcome(shown, error)

    async def _until_found(self, params: dict[str, Any], wanted: str) -> None:
        with anyio.move_on_after(30):
            while True:
                try:
                    found = await self.client.request(REFERENCES, params, timeout=60)
                except LspClientError:
                    return
                if any(loc.get("uri") == wanted for loc in found or []):
                    return
                await anyio.sleep(0.5)

    async def burst(self) -> None:
        """Every burst request at once (an agent's parallel tool calls); recorded in plan order."""
        answers: dict[str, Any] = {}

        async def one(ask: Ask) -> None:
            answers[ask.label] = await self.answer(ask)

        async with anyio.create_task_group() as group:
            for ask in self.plan.burst:
                group.start_soon(one, ask)
        for ask in self.plan.burst:
            self.transcript.record(ASPECT[ask.method], f"{ask.label} (in the burst)", answers[ask.label])

    # -- end --------------------------------------------------------------------------

    async def finish(self) -> None:
        """Diagnostics of the files kept open, shutdown and exit; then record what the client was told."""
        for uri in sorted(self.kept):
            # The agent reads diagnostics of the files it keeps open: wait for them (bounded).
            try:
                await self.client.wait_notification(PUSHED, _about(uri), timeout=8)
            except LspTimeout:
                pass
        await settle(self.client)
        pending = await self.client.start_request("shutdown")
        try:
            shutdown: Any = outcome(await pending.result(timeout=60), None)
        except LspClientError as exc:
            shutdown = outcome(None, exc)
        self.transcript.record("shutdown", "shutdown", shutdown)
        await self.client.notify("exit")
        self.record_received()

    def record_received(self) -> None:
        """Everything the client received besides answers, as aspects."""
        client = self.client
        self.record_diagnostics()
        record_registrations(self.transcript, client)
        # workspace/configuration is the daemon's to answer from the configuration (docs/sharing.md),
        # and registrations are compared as they stand at the end.
        requests = sorted({method for method, _ in client.server_requests if method not in NOT_KINDS})
        self.transcript.record("registrations", "kinds of other server requests received", requests)
        # Log, show and progress notifications are compared as what they say (told.py).
        kinds = sorted({method for method, _ in client.notifications if method not in TOLD})
        self.transcript.record("notifications", "kinds of other notifications received", kinds)
        record_told(self.transcript, client, initialized_twice=self.profile.habits.initialized_twice)
        first = next((m["id"] for m in client.sent_messages if "id" in m and m.get("method") != "initialize"), None)
        self.transcript.notes["told before the first answer"] = self.transcript.normalise(
            before_first_answer(client, first)
        )
        self.transcript.notes["log lines"] = sum(1 for m, _ in client.notifications if m == LOG)
        self.transcript.keep_messages(client.sent_messages, client.messages)

    def record_diagnostics(self) -> None:
        """Per document: the last diagnostics pushed, and every distinct non-empty set pushed."""
        by_uri: dict[str, list[Any]] = {}
        for method, params in self.client.notifications:
            if method == PUSHED and isinstance(params, dict):
                by_uri.setdefault(str(params.get("uri")), []).append(params)
        for uri in sorted(by_uri):
            pushed = [to_code_points(p, self.encoding, _disk_text, uri) for p in by_uri[uri]]
            last = dict(pushed[-1])
            last["diagnostics"] = sorted_unique(last.get("diagnostics", []))
            sets = sorted_unique([sorted_unique(p["diagnostics"]) for p in pushed if p.get("diagnostics")])
            rel = self.transcript.normalise(uri)
            self.transcript.record("diagnostics", f"{rel}: last push", last)
            self.transcript.record("diagnostics", f"{rel}: non-empty sets pushed", sets)


def _ready_at(notifications: list[tuple[str, Any]], signal: ReadySignal) -> int | None:
    """Index of the first notification that is the ready signal, if one has come."""
    pattern = re.compile(signal.log) if signal.log else None
    for index, (method, params) in enumerate(notifications):
        if pattern is not None and method == LOG and pattern.search(str((params or {}).get("message", ""))):
            return index
        if method in signal.notifications:
            return index
        if signal.quiescent and method == "experimental/serverStatus" and (params or {}).get("quiescent") is True:
            return index
    return None


def _about(uri: str) -> Callable[[Any], bool]:
    return lambda params: isinstance(params, dict) and params.get("uri") == uri


def _disk_text(uri: str) -> str | None:
    try:
        return uri_path(uri).read_text(encoding="utf-8")
    except (OSError, ValueError):
        return None
