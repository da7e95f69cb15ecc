"""The second client: another editor on the same server instance, busy while the first works.

It initializes first (so its capabilities are the ones a first-come daemon would use), holds
the first client's file open with the disk text (never editing it: unsaved text winning is
shared on purpose), edits another file, asks for symbols, hover and references, and cancels
references requests, the way an editor does when the user moves on.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
from support.lspclient import LspClient, LspClientError, path_uri

from conformance.positions import lsp_position, negotiated_encoding, position_of
from conformance.profiles import Profile
from conformance.servers import ServerCase
from conformance.session import answer_like_an_editor


class BusyEditor:
    """Client B: its own profile, its own documents, a loop of requests and cancels."""

    def __init__(self, client: LspClient, case: ServerCase, profile: Profile, root: Path) -> None:
        self.client = client
        self.case = case
        self.profile = profile
        self.root = root
        self.encoding = "utf-16"
        self.rounds = 0
        answer_like_an_editor(client)

    async def start(self) -> None:
        """initialize, open the shared file and another one, cancel a few references."""
        params = self.profile.initialize_params(self.case.name, self.root)
        self.client.workspace_folders = params["workspaceFolders"]
        result = await self.client.request("initialize", params, timeout=120)
        await self.client.notify("initialized", {})
        self.encoding = negotiated_encoding(result)
        for rel in (self.case.intl, self.case.other):
            await self.client.open(self.root / rel, self.case.language_id)
        await self.round()

    def _position(self, rel: str, needle: str) -> dict[str, Any]:
        text = (self.root / rel).read_text(encoding="utf-8")
        return {
            "textDocument": {"uri": path_uri(self.root / rel)},
            "position": lsp_position(text, position_of(text, needle), self.encoding),
        }

    async def round(self) -> None:
        """One burst: an edit and its undo on the other file, requests, cancelled references."""
        self.rounds += 1
        other = path_uri(self.root / self.case.other)
        text = (self.root / self.case.other).read_text(encoding="utf-8")
        end = {"line": len(text.split("\n")) - 1, "character": 0}
        comment = "// busy\n" if self.case.language_id == "c" else "# busy\n"
        await self.client.change_incremental(other, 2 * self.rounds, {"start": end, "end": end}, comment)
        after = {"line": end["line"] + 1, "character": 0}
        await self.client.change_incremental(other, 2 * self.rounds + 1, {"start": end, "end": after}, "")
        at = self._position(self.case.intl, self.case.cross_file)
        refs = {**at, "context": {"includeDeclaration": True}}
        # One at a time, each cancelled at once (the user moved on), each with its own progress
        # token as VS Code sends them: distinct requests that really reach the server.
        for i in range(2):
            request = await self.client.start_request(
                "textDocument/references", {**refs, "workDoneToken": f"b{self.rounds}.{i}"}
            )
            await request.cancel()
            try:
                await request.result(timeout=60)
            except LspClientError:
                pass
        asks = [
            ("textDocument/documentSymbol", {"textDocument": at["textDocument"]}),
            ("textDocument/hover", at),
            ("textDocument/references", refs),
        ]
        pending = [await self.client.start_request(method, params) for method, params in asks]
        for request in pending:
            try:
                await request.result(timeout=60)
            except LspClientError:
                pass  # cancelled, or the server's trouble: B's answers are not compared

    async def ask_now(self) -> None:
        """Send requests on the shared file without waiting (their answers are not compared)."""
        # codeAction: never answered from the daemon's cache, so it is really in flight.
        at = self._position(self.case.intl, self.case.cross_file)
        span = {"start": at["position"], "end": at["position"]}
        params = {"textDocument": at["textDocument"], "range": span, "context": {"diagnostics": []}}
        for _ in range(2):
            await self.client.start_request("textDocument/codeAction", params)
        # A slow one too (every function of the project matches), so it is still open when
        # the server's applyEdit comes back.
        await self.client.start_request("workspace/symbol", {"query": "f", "workDoneToken": f"b{self.rounds}.ws"})

    async def keep_busy(self, stop: anyio.Event, pause: float = 0.2) -> None:
        """Rounds until stop is set, `pause` seconds apart."""
        while not stop.is_set():
            await self.round()
            with anyio.move_on_after(pause):
                await stop.wait()
