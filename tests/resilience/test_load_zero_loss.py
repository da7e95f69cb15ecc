"""Under concurrent load every request gets exactly one answer, and it is its own.

Ten clients (eight on the socket, two through `lensmux client` bridges) send a
hundred requests each at once to the echo server through one daemon, four in
flight per client. Every request's params name its (client, seq) and the echo
server answers with the params, so an answer that reaches the wrong request
is recognised; a tenth of the requests ask shared questions instead, so the
cache and the coalescing of identical requests run under the same load.
Three more clients do the same against the pygls fake server (`fake/echo`, and
hover on distinct lines of a document one of them edits meanwhile). Lost,
duplicated and misrouted answers must all be zero; speed is measured by
`python -m bench.mux.load`, not here.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import pytest
from support.daemon_proc import DaemonProc, running_daemon
from support.fake_servers import echo_server_argv, fake_server_config
from support.lspclient import LspClient, LspResponseError, LspTimeout, RequestId, path_uri

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

ECHO_CLIENTS = 10
BRIDGE_CLIENTS = 2
ECHO_REQUESTS = 100
FAKE_CLIENTS = 3
FAKE_REQUESTS = 30
INFLIGHT = 4
HOT_FRACTION = 0.1
HOT_KEYS = 8
DOC_LINES = 400
# Generous: an answer missing after this long is lost, not slow.
DEADLINE_S = 60.0
METHODS = ("textDocument/hover", "textDocument/definition", "textDocument/references", "textDocument/documentSymbol")

Check = Callable[[Any], bool]


@dataclass
class Ledger:
    """Requests each connection sent (id -> judge of the answer), and what came back."""

    sent: dict[str, dict[RequestId, Check]] = field(default_factory=dict)
    log_start: dict[str, int] = field(default_factory=dict)
    error_answers: list[str] = field(default_factory=list)

    def count(self, clients: list[LspClient]) -> Counter[str]:
        """Correct, lost, duplicated and misrouted answers over every connection's messages since it began."""
        counts: Counter[str] = Counter()
        for client in clients:
            sent = self.sent[client.name]
            answers: Counter[RequestId] = Counter()
            for message in client.messages[self.log_start[client.name] :]:
                if "method" in message or "id" not in message:
                    continue
                rid = message["id"]
                if rid not in sent:
                    counts["misrouted"] += 1  # an answer to an id this connection never used
                    continue
                answers[rid] += 1
                if answers[rid] > 1:
                    counts["duplicated"] += 1
                elif "result" in message:
                    counts["ok" if sent[rid](message["result"]) else "misrouted"] += 1
            counts["lost"] += sum(1 for rid in sent if answers[rid] == 0)
        return counts


Ask = tuple[str, Any, Check]


async def drive(client: LspClient, asks: list[Ask], ledger: Ledger) -> None:
    """Send every ask with INFLIGHT outstanding at a time; answers are judged afterwards."""
    sent = ledger.sent.setdefault(client.name, {})
    ledger.log_start[client.name] = len(client.messages)
    todo = iter(asks)

    async def worker() -> None:
        for method, params, check in todo:
            pending = await client.start_request(method, params)
            sent[pending.id] = check
            try:
                await pending.result(timeout=DEADLINE_S)
            except LspResponseError as exc:
                ledger.error_answers.append(f"{client.name} {method}: {exc}")
            except LspTimeout:
                pass  # counted as lost by the ledger

    async with anyio.create_task_group() as tg:
        for _ in range(INFLIGHT):
            tg.start_soon(worker)


def echo_asks(client_no: int, root: Path) -> list[Ask]:
    """Requests unique to (client, seq), except a few shared hot questions."""
    rng = random.Random(client_no)
    asks: list[Ask] = []
    for seq in range(ECHO_REQUESTS):
        if rng.random() < HOT_FRACTION:
            params: dict[str, Any] = {"textDocument": {"uri": path_uri(root / "hot.c")}}
            params["position"] = {"line": rng.randrange(HOT_KEYS), "character": 0}
        else:
            params = {"textDocument": {"uri": path_uri(root / "a.c")}, "position": {"line": seq, "character": 0}}
            params["lensmuxTest"] = {"client": client_no, "seq": seq}
        method = METHODS[seq % len(METHODS)]
        asks.append((method, params, _equals(params)))
    return asks


def _equals(expected: Any) -> Check:
    return lambda result: bool(result == expected)


def fake_asks(client_no: int, doc_uri: str) -> list[Ask]:
    """fake/echo with unique params, and hover on lines no other request of the run asks about."""
    asks: list[Ask] = []
    for seq in range(FAKE_REQUESTS):
        if seq % 2:
            params = {"client": client_no, "seq": seq}
            asks.append(("fake/echo", params, _equals(params)))
        else:
            line = client_no * FAKE_REQUESTS + seq
            hover = {"textDocument": {"uri": doc_uri}, "position": {"line": line, "character": 0}}
            asks.append(("textDocument/hover", hover, _hover_of(line)))
    return asks


def _hover_of(line: int) -> Check:
    def check(result: Any) -> bool:
        value = result.get("contents", {}).get("value", "") if isinstance(result, dict) else ""
        return f" line={line}\n" in value and f"row {line} " in value

    return check


@pytest.fixture
def load_daemon(tmp_path: Path) -> Iterator[DaemonProc]:
    """A daemon serving the pygls fake as `fake` and the raw echo server as `echo`."""
    argv = echo_server_argv()
    echo = (
        f"[servers.echo]\ncommand = {json.dumps(argv[0])}\nargs = {json.dumps(argv[1:])}\n"
        'root_markers = [".git"]\n[servers.echo.languages]\nc = [".c"]\n'
    )
    with running_daemon(tmp_path / "d", fake_server_config(extra=echo)) as daemon:
        yield daemon


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A workspace with a long text document."""
    path = tmp_path / "ws"
    (path / ".git").mkdir(parents=True)
    (path / "doc.txt").write_text("".join(f"row {i} of the document\n" for i in range(DOC_LINES)))
    return path


@asynccontextmanager
async def connected(
    daemon: DaemonProc, root: Path, server: str, count: int, bridges: int
) -> AsyncIterator[list[LspClient]]:
    """`count` initialized clients of `server`, the last `bridges` through `lensmux client`."""
    async with AsyncExitStack() as stack:
        clients = []
        for i in range(count):
            name = f"{server}-{i}"
            if i >= count - bridges:
                opened = LspClient.over_process(daemon.client_argv(server), env=daemon.env, name=name)
            else:
                opened = LspClient.over_unix(daemon.runtime_dir / f"{server}.sock", name=name)
            client = await stack.enter_async_context(opened)
            await client.initialize(root)
            clients.append(client)
        yield clients


async def edit_while_loaded(client: LspClient, uri: str) -> None:
    """Edits the hovered document meanwhile (appending, so no hovered line moves)."""
    for version in range(2, 12):
        line = DOC_LINES + version - 2
        end = {"line": line, "character": 0}
        await client.change_incremental(uri, version, {"start": end, "end": end}, f"appended {version}\n")
        await anyio.sleep(0.02)


async def test_concurrent_clients_get_every_answer_once_and_only_their_own(load_daemon: DaemonProc, root: Path) -> None:
    ledger = Ledger()
    doc = root / "doc.txt"
    async with (
        connected(load_daemon, root, "echo", ECHO_CLIENTS, BRIDGE_CLIENTS) as echo_clients,
        connected(load_daemon, root, "fake", FAKE_CLIENTS, 0) as fake_clients,
    ):
        for client in fake_clients:
            await client.open(doc, "plaintext")
        async with anyio.create_task_group() as tg:
            for i, client in enumerate(echo_clients):
                tg.start_soon(drive, client, echo_asks(i, root), ledger)
            for i, client in enumerate(fake_clients):
                tg.start_soon(drive, client, fake_asks(i, path_uri(doc)), ledger)
            tg.start_soon(edit_while_loaded, fake_clients[0], path_uri(doc))
        await anyio.sleep(0.5)  # a duplicate would arrive after its original
        counts = ledger.count([*echo_clients, *fake_clients])
        status = await anyio.to_thread.run_sync(load_daemon.status)

    asked = ECHO_CLIENTS * ECHO_REQUESTS + FAKE_CLIENTS * FAKE_REQUESTS
    assert ledger.error_answers == []
    assert (counts["lost"], counts["duplicated"], counts["misrouted"]) == (0, 0, 0)
    assert counts["ok"] == asked
    echo = next(i for i in status["instances"] if i["server"] == "echo")
    hits = sum(m["hits"] for m in echo["cache"]["methods"].values())
    assert hits > 0, "the shared questions were never answered from the cache"
    assert all(i["in_flight"] == 0 for i in status["instances"])
