"""The scripted editor session whose transcript the suite compares (direct vs through lensmux).

One session drives one client through what an editor does with a file: initialize with its
profile, open/edit non-ASCII text, diagnostics (push, or pull when both sides declare it),
symbols, hover, definition, references, a cancel, rename, a code action with the server's
`workspace/applyEdit`, workspace folders, close. Each answer is recorded under an aspect, its
positions turned into code points of the text the client holds (see positions.py).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
from support.lspclient import LspClient, LspClientError, LspTimeout, path_uri, uri_path

from conformance.checks import NOISE, REFRESH_CAPABILITY, record_protocol_checks
from conformance.positions import lsp_position, negotiated_encoding, position_of, to_code_points
from conformance.profiles import Profile
from conformance.servers import EDIT_TEXT, ERROR_TEXT, NEW_NAME, ServerCase
from conformance.told import before_first_answer, record_told
from conformance.transcript import Transcript, outcome, sorted_unique


def answer_like_an_editor(client: LspClient) -> None:
    """Answer refresh requests as editors do (null); an error answer makes some servers exit."""
    for method in REFRESH_CAPABILITY:
        client.on_server_request(method, lambda params: None)


def _answers_and_news(client: LspClient) -> int:
    return sum(1 for m in client.messages if m.get("method") not in NOISE)


async def settle(client: LspClient, quiet: float = 0.3, limit: float = 5) -> None:
    """Wait until nothing but progress and log lines has arrived for `quiet` seconds (at most `limit`)."""
    with anyio.move_on_after(limit):
        while True:
            seen = _answers_and_news(client)
            await anyio.sleep(quiet)
            if _answers_and_news(client) == seen:
                return


class Session:
    """One scripted editor session over an already-connected client."""

    def __init__(
        self,
        client: LspClient,
        case: ServerCase,
        profile: Profile,
        root: Path,
        extra: Path,
        *,
        while_command_runs: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        self.client = client
        # Called right after executeCommand is sent: the busy editor asks something then, so
        # the server's applyEdit arrives while another client has a newer request in flight.
        self.while_command_runs = while_command_runs
        self.case = case
        self.profile = profile
        self.root = root
        self.extra = extra
        self.transcript = Transcript(root.parent)
        self.texts: dict[str, str] = {}
        self.encoding = "utf-16"
        self.server_caps: dict[str, Any] = {}
        self.uri = path_uri(root / case.intl)
        self.version = 0
        answer_like_an_editor(client)

    # -- helpers ------------------------------------------------------------------

    def text_of(self, uri: str) -> str | None:
        """The text the client holds for uri, else the file on disk."""
        if uri in self.texts:
            return self.texts[uri]
        try:
            return uri_path(uri).read_text(encoding="utf-8")
        except (OSError, ValueError):
            return None

    def at(self, needle: str, *, after: bool = False) -> dict[str, int]:
        """The LSP position of needle in the open document, in the negotiated encoding."""
        text = self.texts[self.uri]
        return lsp_position(text, position_of(text, needle, after=after), self.encoding)

    def cp(self, value: Any) -> Any:
        """value with positions in code points (default document: the session's file)."""
        return to_code_points(value, self.encoding, self.text_of, self.uri)

    async def ask(self, aspect: str, label: str, method: str, params: Any, *, sort: bool = False) -> Any:
        """Send a request, record its normalised outcome, return the raw result (None on error)."""
        result: Any = None
        error: LspClientError | None = None
        try:
            result = await self.client.request(method, params, timeout=60)
        except LspClientError as exc:
            error = exc
        shown = self.cp(result)
        if sort and isinstance(shown, list):
            shown = sorted_unique(shown)
        self.transcript.record(aspect, label, outcome(shown, error))
        return result

    def doc(self, **extra: Any) -> dict[str, Any]:
        """Params naming the session's document, plus extra members."""
        return {"textDocument": {"uri": self.uri}, **extra}

    # -- the script ---------------------------------------------------------------

    async def run(self) -> Transcript:
        """Play the whole session; returns the transcript."""
        await self.initialize()
        await self.open_and_edit()
        await self.navigate()
        await self.cancel()
        await self.rename()
        await self.quickfix()
        await self.code_action()
        await self.workspace_folders()
        await self.close()
        record_protocol_checks(self.transcript, self.client, self.profile, self.case.name)
        record_told(self.transcript, self.client)
        self.transcript.keep_messages(self.client.sent_messages, self.client.messages)
        return self.transcript

    async def initialize(self) -> None:
        """`initialize` with the profile's params, then `initialized`."""
        params = self.profile.initialize_params(self.case.name, self.root)
        self.client.workspace_folders = params["workspaceFolders"]
        pending = await self.client.start_request("initialize", params)
        result = await pending.result(timeout=120)
        self.client.initialize_result = result
        told = before_first_answer(self.client, pending.id)
        self.transcript.record("startup", "told before the InitializeResult", told)
        await self.client.notify("initialized", {})
        await settle(self.client)  # registrations that follow `initialized` decide push or pull
        self.encoding = negotiated_encoding(result)
        caps = {k: v for k, v in result["capabilities"].items() if k != "positionEncoding"}
        self.server_caps = result["capabilities"]
        self.transcript.record("initialize", "capabilities", caps)
        self.transcript.record("initialize", "serverInfo", result.get("serverInfo"))
        offered = self.profile.offered_encodings(self.case.name)
        self.transcript.record("encoding", "announced encoding is one the client offered", self.encoding in offered)

    def pull_mode(self) -> bool:
        """Whether this client pulls diagnostics: it declared it and the server offers it to it."""
        if self.profile.declares(self.case.name, "textDocument", "diagnostic") is None:
            return False
        if "diagnosticProvider" in self.server_caps:
            return True
        return any(
            reg.get("method") == "textDocument/diagnostic"
            for method, params in self.client.server_requests
            if method == "client/registerCapability"
            for reg in (params or {}).get("registrations", [])
        )

    async def diagnostics(self, label: str, since: int, *, open_document: bool = True) -> None:
        """Record this document's diagnostics now: pulled (if open), and the last set pushed since `since`."""
        pushed = "textDocument/publishDiagnostics"
        if not open_document:
            pass
        elif self.pull_mode():
            await self.ask("diagnostics", f"{label}: pull", "textDocument/diagnostic", self.doc())
        else:
            try:
                await self.client.wait_notification(pushed, lambda p: p.get("uri") == self.uri, since=since, timeout=8)
            except LspTimeout:
                pass
        await settle(self.client)
        last = [p for m, p in self.client.notifications[since:] if m == pushed and p.get("uri") == self.uri]
        shown: Any = None
        if last:
            shown = dict(self.cp(last[-1]))
            shown["diagnostics"] = sorted_unique(shown.get("diagnostics", []))
        self.transcript.record("diagnostics", f"{label}: last push", shown)

    async def edit(self, needle: str, insert: str) -> None:
        """Insert text right after needle with an incremental didChange."""
        at = self.at(needle, after=True)
        self.version += 1
        text = self.texts[self.uri]
        line, char = position_of(text, needle, after=True)
        lines = text.split("\n")
        lines[line] = lines[line][:char] + insert + lines[line][char:]
        self.texts[self.uri] = "\n".join(lines)
        await self.client.change_incremental(self.uri, self.version, {"start": at, "end": at}, insert)

    async def open_and_edit(self) -> None:
        """didOpen, two incremental edits after non-ASCII text, symbols and hover in between."""
        text = (self.root / self.case.intl).read_text(encoding="utf-8")
        self.texts[self.uri] = text
        since = len(self.client.notifications)
        # Editors number versions their own way (Neovim sends b:changedtick), rarely from 1.
        self.version = 10
        await self.client.open(self.root / self.case.intl, self.case.language_id, text, version=self.version)
        await self.diagnostics("after open", since)
        await self.ask("documents", "symbols after open", "textDocument/documentSymbol", self.doc())
        await self.edit(self.case.edit_after, EDIT_TEXT)
        await self.ask("documents", "symbols after edit", "textDocument/documentSymbol", self.doc())
        await self.ask("documents", "hover after edit", "textDocument/hover", self.doc(position=self.at("twice(3)")))
        since = len(self.client.notifications)
        await self.edit(self.case.error_after, ERROR_TEXT[self.case.language_id])
        await self.diagnostics("after an edit that adds an error", since)

    async def navigate(self) -> None:
        """definition, references (same file and cross-file), hover."""
        at = self.at(self.case.symbol)
        await self.ask("navigation", "definition", "textDocument/definition", self.doc(position=at))
        refs = self.doc(position=at, context={"includeDeclaration": True})
        await self.ask("navigation", "references", "textDocument/references", refs, sort=True)
        await self.ask("navigation", "hover", "textDocument/hover", self.doc(position=at))
        await self.cross_file_references("cross-file references", self.case.cross_file)

    async def cross_file_references(self, label: str, needle: str) -> None:
        """References of a symbol defined in another file, once the server has found that file.

        Asked again (up to 30 s) until the defining file is among the answers: the server may
        still be indexing, and only the answer after that is deterministic (a stale answer
        that never goes away is what this is meant to catch).
        """
        params = self.doc(position=self.at(needle), context={"includeDeclaration": True})
        home = self.case.cross_file_home
        defining = path_uri(self.root / home) if home else None
        with anyio.move_on_after(30 if defining else 0):
            while True:
                try:
                    found = await self.client.request("textDocument/references", params, timeout=60)
                except LspClientError:
                    break
                if any(loc.get("uri") == defining for loc in found or []):
                    break
                await anyio.sleep(0.5)
        await self.ask("references", label, "textDocument/references", params, sort=True)

    async def cancel(self) -> None:
        """Cancel one hover at once; the client must still get one answer, and work must go on."""
        pending = await self.client.start_request("textDocument/hover", self.doc(position=self.at(self.case.symbol)))
        await pending.cancel()
        answered: Any
        try:
            await pending.result(timeout=60)
            answered = "result"
        except LspClientError as exc:
            # RequestCancelled, or the answer: both are what the spec allows; anything else is not.
            code = getattr(exc, "code", None)
            answered = "cancelled" if code == -32800 else {"error": code}
        self.transcript.record("cancel", "cancelled hover got an answer", answered in ("result", "cancelled"))
        await self.cross_file_references("references after cancels", self.case.after_cancels)

    async def rename(self) -> None:
        """rename: the WorkspaceEdit, with the client's own document versions."""
        params = self.doc(position=self.at(self.case.symbol), newName=NEW_NAME)
        result = await self.ask("rename", "rename", "textDocument/rename", params)
        self.transcript.record("rename", "edit versions", _versions(result))

    async def quickfix(self) -> None:
        """codeAction for the error the edit made, with the diagnostics the client holds there."""
        if not self.case.quickfix_at:
            return
        start = self.at(self.case.quickfix_at)
        pushed = [p for m, p in self.client.notifications if m == "textDocument/publishDiagnostics"]
        held: list[Any] = next((p["diagnostics"] for p in reversed(pushed) if p.get("uri") == self.uri), [])
        near = [d for d in held if d.get("range", {}).get("start", {}).get("line") == start["line"]]
        params = self.doc(range={"start": start, "end": start}, context={"diagnostics": near})
        result = await self.ask("quickfix", "offered quickfixes", "textDocument/codeAction", params)
        versions = [_versions(a.get("edit")) for a in result or [] if isinstance(a, dict)]
        self.transcript.record("quickfix", "edit versions", versions)

    async def code_action(self) -> None:
        """codeAction on a range, then run the chosen action; record the applyEdit it causes."""
        start = self.at(self.case.action_range)
        end = self.at(self.case.action_range, after=True)
        params = self.doc(range={"start": start, "end": end}, context={"diagnostics": []})
        actions = await self.ask("code_action", "offered actions", "textDocument/codeAction", params)
        chosen = next((a for a in actions or [] if self.case.action_title in a.get("title", "")), None)
        since = len(self.client.server_requests)
        command: Any = None
        if chosen is not None:
            command = chosen.get("command") if isinstance(chosen.get("command"), dict) else None
            if chosen.get("command") and not command:
                command = chosen  # a bare Command
        elif self.case.execute_command:
            command = {"command": self.case.execute_command[0], "arguments": [self.uri]}
        if command is not None:
            run = {"command": command["command"], "arguments": command.get("arguments", [])}
            pending = await self.client.start_request("workspace/executeCommand", run)
            if self.while_command_runs is not None:
                await self.while_command_runs()
            result: Any = None
            error: LspClientError | None = None
            try:
                result = await pending.result(timeout=60)
            except LspClientError as exc:
                error = exc
            self.transcript.record("code_action", "executeCommand", outcome(self.cp(result), error))
            await settle(self.client)
        edits = [self.cp(p) for m, p in self.client.server_requests[since:] if m == "workspace/applyEdit"]
        self.transcript.record("code_action", "applyEdit requests received", edits)
        self.transcript.record("code_action", "applyEdit versions", [_versions(e.get("edit")) for e in edits])

    async def workspace_folders(self) -> None:
        """Add a folder (servers that support folders): its symbols must become visible."""
        if not self.case.extra_folder:
            return
        folder = {"uri": path_uri(self.extra), "name": self.extra.name}
        self.client.workspace_folders = [*(self.client.workspace_folders or []), folder]
        event = {"event": {"added": [folder], "removed": []}}
        await self.client.notify("workspace/didChangeWorkspaceFolders", event)
        found: Any = []
        with anyio.move_on_after(10):
            while not found:
                found = await self.client.request("workspace/symbol", {"query": self.case.extra_symbol})
                found = [s for s in found or [] if s.get("name") == self.case.extra_symbol]
                if not found:
                    await anyio.sleep(0.5)
        self.transcript.record("workspace_folders", "symbol of an added folder", self.cp(found))

    async def close(self) -> None:
        """didClose: the server's final (usually empty) diagnostics for the document."""
        since = len(self.client.notifications)
        await self.client.close(self.uri)
        del self.texts[self.uri]
        await self.diagnostics("after close", since, open_document=False)


def _versions(edit: Any) -> list[Any]:
    """(uri, version) of each versioned document in a WorkspaceEdit, sorted."""
    if not isinstance(edit, dict):
        return []
    out = [
        [change["textDocument"].get("uri"), change["textDocument"].get("version")]
        for change in edit.get("documentChanges", [])
        if isinstance(change, dict) and isinstance(change.get("textDocument"), dict)
    ]
    return sorted(out, key=str)
