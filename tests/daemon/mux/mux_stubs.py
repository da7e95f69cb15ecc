"""Stand-ins for a client session and an instance, for unit tests of routing decisions."""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

from lensmux.adapters.base import Adapter
from lensmux.adapters.spec import ServerConfig
from lensmux.daemon.mux.diagnostics.diagnostics import DiagnosticsStore
from lensmux.daemon.mux.documents.documents import DocumentStore
from lensmux.daemon.mux.lifecycle.warmup import Warmup
from lensmux.daemon.mux.progress.prologue import Prologue
from lensmux.daemon.mux.progress.request_progress import ShownProgress
from lensmux.daemon.mux.requests.cache import ResponseCache
from lensmux.daemon.mux.requests.pending import PendingTable
from lensmux.daemon.mux.workspace.registrations import RegistrationTable


class FakeClock:
    """A monotonic clock the test moves by hand (`now`)."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class StubClient:
    """Records what the daemon sends a client, decoded."""

    def __init__(self, cid: int, capabilities: dict[str, Any] | None = None) -> None:
        self.id = cid
        self.name = f"client-{cid}"
        self.capabilities = capabilities or {}
        self.initialization_options: dict[str, Any] = {}
        self.initialized = True
        self.messages: list[dict[str, Any]] = []

    @property
    def supports_progress(self) -> bool:
        window = self.capabilities.get("window")
        return isinstance(window, dict) and bool(window.get("workDoneProgress"))

    def send(self, body: bytes) -> None:
        self.messages.append(json.loads(body))

    def request(self, method: str, params: Any, on_response: Any = None) -> None:
        self.messages.append({"method": method, "params": params, "id": f"lensmux-{len(self.messages)}"})

    def reply(self, id_: Any, result: Any) -> None:
        self.messages.append({"id": id_, "result": result})

    def reply_error(self, id_: Any, code: int, message: str) -> None:
        self.messages.append({"id": id_, "error": {"code": code, "message": message}})

    def of(self, method: str) -> list[Any]:
        """Params of every message of `method` sent to this client."""
        return [m.get("params") for m in self.messages if m.get("method") == method]

    def answers(self) -> list[dict[str, Any]]:
        """Every response sent to this client."""
        return [m for m in self.messages if "method" not in m]


class StubInstance:
    """The instance state routing reads and writes, without a server process."""

    def __init__(self, *clients: StubClient, adapter: Adapter | None = None) -> None:
        self.name = "stub@/p"
        self.adapter = adapter or Adapter(ServerConfig(name="stub", command="stub"))
        self.clients: dict[int, Any] = {c.id: c for c in clients}
        self.documents = DocumentStore()
        self.diagnostics = DiagnosticsStore()
        self.registrations = RegistrationTable()
        self.pending = PendingTable()
        self.ready = True
        self.config = SimpleNamespace(timeouts=SimpleNamespace(for_method=lambda method: 30.0), pull_diagnostics=True)
        self.to_server: list[dict[str, Any]] = []
        self.progress_routes: dict[Any, set[int]] = {}
        self.progress_pending: dict[Any, Any] = {}
        self.shown_progress = ShownProgress()
        self.client_tokens: dict[str, Any] = {}
        self.prologue = Prologue(self.name, self.adapter.restatement_key)
        self.warmup = Warmup(self.name, self.adapter, ResponseCache(1 << 20), 3.0)

    def last_active_client(self) -> Any:
        """The first client stands in for the one a server request is routed to."""
        return next(iter(self.clients.values()), None)

    async def send_to_server(self, body: bytes) -> None:
        self.to_server.append(json.loads(body))

    async def notify_server(self, method: str, params: Any) -> None:
        self.to_server.append({"method": method, "params": params})


PULL = {"textDocument": {"diagnostic": {}}, "workspace": {"diagnostics": {"refreshSupport": True}}}
PUSH: dict[str, Any] = {"textDocument": {"publishDiagnostics": {"versionSupport": True}}}
WATCHER = {"workspace": {"didChangeWatchedFiles": {"dynamicRegistration": True}}}


def stub(cid: int, capabilities: dict[str, Any] | None = None) -> Any:
    """A StubClient, typed loosely so it stands in for a ClientSession."""
    return StubClient(cid, capabilities)
