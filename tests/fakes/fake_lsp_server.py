"""Scripted fake language server (pygls 2) for lensmux fault-injection tests.

Run as `python tests/fakes/fake_lsp_server.py [flags]`; flags combine:

  --crash-after N        exit(1) on receiving the Nth request after initialize
  --crash-on-initialize  exit(1) on receiving initialize
  --hang-on METHOD       never answer METHOD, not even when cancelled (repeatable)
  --slow MS              delay every answer by MS milliseconds
  --garbage-after N      answer requests after the Nth (after initialize) with bytes
                         that are not LSP framing
  --flood N              send N window/logMessage notifications after `initialized`
  --exit-on-didopen      exit(1) when a didOpen arrives
  --pid-file PATH        write the pid to PATH at start
  --count-file PATH      append one line to PATH per start
  --crash-while-exists PATH
                         exit(1) on any request after initialize while PATH exists

Besides hover/definition/references/documentSymbol/callHierarchy/workspaceSymbol it
answers these requests (params are JSON objects):

  fake/echo                 -> the params
  fake/documentText         -> {uri: {"text", "version"}} for every open document
  fake/log                  -> [[method, params], ...] every notification received,
                               $/cancelRequest included
  fake/requests             -> [[method, id], ...] every request received
  fake/notifyMe {count}     -> sends `count` window/logMessage first, then {"sent": count}
  fake/askClient {method, params}
                            -> sends that server->client request; {"result": r} or
                               {"error": {...}} with the client's answer
  fake/progress {token?, unfinished?}
                            -> window/workDoneProgress/create, then $/progress
                               begin/report/end (no end if unfinished); {"token": token}
  fake/registerCapability {registrations?}
                            -> sends client/registerCapability; like askClient
  fake/answers              -> every answer the clients gave to `fake.applyEdit`

and two editing features that name the open document's version (the daemon's):

  workspace/executeCommand `fake.applyEdit` [{edit, waitFor?}]
                            -> once a request of method `waitFor` (if given) has
                               arrived, sends workspace/applyEdit {edit}; returns
                               and records the client's answer
  textDocument/rename       -> a WorkspaceEdit with documentChanges replacing line 0
                               of the document with newName, at its current version
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import os
import sys
import uuid
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from cattrs import Converter
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol, default_converter
from pygls.protocol.json_rpc import (
    JsonRPCNotification,
    JsonRPCRequestMessage,
    JsonRPCResponseMessage,
    MsgId,
)

FAKE_GARBAGE = b"\x00\xffthis is not LSP framing\r\n\r\n{{{"
FAKE_DEFAULT_REGISTRATIONS = [
    {
        "id": "fake-watch",
        "method": "workspace/didChangeWatchedFiles",
        "registerOptions": {"watchers": [{"globPattern": "**/*"}]},
    }
]


@dataclass(frozen=True)
class FakeBehaviour:
    """The faults this process injects, from the command line."""

    crash_after: int | None = None
    crash_on_initialize: bool = False
    hang_on: frozenset[str] = frozenset()
    slow_ms: int = 0
    garbage_after: int | None = None
    flood: int = 0
    exit_on_didopen: bool = False
    crash_while_exists: Path | None = None


def fake_die(reason: str) -> None:
    """Leave at once, as a crashing server would: no shutdown, no flushing of anything else."""
    sys.stderr.write(f"fake_lsp_server: {reason}\n")
    sys.stderr.flush()
    os._exit(1)


def fake_plain_structure(obj: dict[str, Any], cls: type[Any]) -> Any:
    """Keep untyped params and results as plain JSON values."""
    return cls(**obj)


def fake_converter() -> Converter:
    """pygls' converter, minus its turning of unknown methods' params into namedtuples."""
    converter: Converter = default_converter()  # type: ignore[no-untyped-call]
    for message_class in (JsonRPCRequestMessage, JsonRPCResponseMessage, JsonRPCNotification):
        converter.register_structure_hook(message_class, fake_plain_structure)
    return converter


class FakeProtocol(LanguageServerProtocol):
    """pygls protocol with hooks where a well-behaved server would not misbehave."""

    _server: FakeLanguageServer

    def __init__(self, server: FakeLanguageServer, converter: Any) -> None:
        super().__init__(server, converter)
        self.fake_notifications: list[list[Any]] = []
        self.fake_requests: list[list[Any]] = []
        self.fake_requests_after_initialize = 0
        self.fake_answers: list[Any] = []

    def structure_message(self, data: dict[str, Any]) -> Any:
        # JSON-RPC lets `params` be omitted; pygls cannot structure custom methods without it.
        if "jsonrpc" in data and "method" in data and "params" not in data:
            data = {**data, "params": None}
        return super().structure_message(data)

    def _handle_notification(self, method_name: str, params: Any) -> None:
        self.fake_notifications.append([method_name, self._fake_plain(params)])
        behaviour = self._server.behaviour
        if method_name == types.TEXT_DOCUMENT_DID_OPEN and behaviour.exit_on_didopen:
            fake_die("exiting on didOpen as told")
        super()._handle_notification(method_name, params)

    def _handle_request(self, msg_id: MsgId, method_name: str, params: Any) -> None:
        self.fake_requests.append([method_name, msg_id])
        behaviour = self._server.behaviour
        if method_name == types.INITIALIZE:
            if behaviour.crash_on_initialize:
                fake_die("crashing on initialize as told")
        else:
            self.fake_requests_after_initialize += 1
            count = self.fake_requests_after_initialize
            if behaviour.crash_after is not None and count >= behaviour.crash_after:
                fake_die(f"crashing on request {count} ({method_name}) as told")
            if behaviour.crash_while_exists is not None and behaviour.crash_while_exists.exists():
                fake_die(f"crashing on {method_name}: {behaviour.crash_while_exists} exists")
            if behaviour.garbage_after is not None and count > behaviour.garbage_after:
                sys.stdout.buffer.write(FAKE_GARBAGE)
                sys.stdout.buffer.flush()
                return
        if method_name in behaviour.hang_on:
            return  # never answered: no future exists, so a cancel finds nothing either
        super()._handle_request(msg_id, method_name, params)

    def _send_response(self, msg_id: MsgId, result: Any | None = None, error: Any | None = None) -> None:
        send = functools.partial(super()._send_response, msg_id, result, error)
        delay_ms = self._server.behaviour.slow_ms
        if delay_ms > 0:
            asyncio.get_running_loop().call_later(delay_ms / 1000, send)
        else:
            send()

    def _fake_plain(self, params: Any) -> Any:
        """JSON-like form of structured (attrs) params, for fake/log."""
        if hasattr(params, "__attrs_attrs__"):
            return self._converter.unstructure(params)
        return params

    def fake_notify(self, method: str, params: Any) -> None:
        """Send a notification with raw JSON params (pygls would want lsprotocol objects)."""
        self._send_data(JsonRPCNotification(method=method, jsonrpc="2.0", params=params))

    async def fake_ask(self, method: str, params: Any) -> dict[str, Any]:
        """Send a server->client request with raw params; {"result"} or {"error"} answer."""
        msg_id = f"fake-{uuid.uuid4()}"
        future: Future[Any] = Future()
        self._request_futures[msg_id] = future
        self._result_types[msg_id] = None
        self._send_data(JsonRPCRequestMessage(id=msg_id, method=method, jsonrpc="2.0", params=params))
        try:
            return {"result": await asyncio.wrap_future(future)}
        except JsonRpcException as exc:
            return {"error": {"code": exc.code, "message": exc.message, "data": exc.data}}


class FakeLanguageServer(LanguageServer):
    """The fake server; `behaviour` says which faults to inject."""

    protocol: FakeProtocol

    def __init__(self, behaviour: FakeBehaviour) -> None:
        super().__init__(
            "fake-lsp",
            "0.1",
            text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
            protocol_cls=FakeProtocol,
            converter_factory=fake_converter,
        )
        self.behaviour = behaviour


def fake_open_document(ls: FakeLanguageServer, uri: str) -> Any:
    """The open document at uri, or None (pygls would read unopened files from disk)."""
    return ls.workspace.text_documents.get(unquote(uri))


def fake_register_features(server: FakeLanguageServer) -> None:
    """Install the handlers listed in the module docstring."""

    @server.feature(types.INITIALIZED)
    def initialized(ls: FakeLanguageServer, params: types.InitializedParams) -> None:
        for index in range(ls.behaviour.flood):
            ls.protocol.fake_notify("window/logMessage", {"type": 4, "message": f"flood {index}"})

    @server.feature(types.EXIT)
    def exit_(ls: FakeLanguageServer, params: Any) -> None:
        # pygls would then wait for its stdin reader thread; a real server just leaves.
        sys.stdout.flush()
        os._exit(0 if ls.protocol._shutdown else 1)

    @server.feature(types.TEXT_DOCUMENT_HOVER)
    def hover(ls: FakeLanguageServer, params: types.HoverParams) -> types.Hover | None:
        document = fake_open_document(ls, params.text_document.uri)
        if document is None:
            return None
        lines = document.lines
        line = params.position.line
        text = lines[line].rstrip("\r\n") if line < len(lines) else ""
        value = f"version={document.version} line={line}\n\n```\n{text}\n```"
        return types.Hover(contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value=value))

    def location_at(uri: str, line: int) -> types.Location:
        span = types.Range(types.Position(line, 0), types.Position(line, 1))
        return types.Location(uri=uri, range=span)

    @server.feature(types.TEXT_DOCUMENT_DEFINITION)
    def definition(ls: FakeLanguageServer, params: types.DefinitionParams) -> types.Location:
        return location_at(params.text_document.uri, 0)

    @server.feature(types.TEXT_DOCUMENT_REFERENCES)
    def references(ls: FakeLanguageServer, params: types.ReferenceParams) -> list[types.Location]:
        uri = params.text_document.uri
        return [location_at(uri, 0), location_at(uri, params.position.line)]

    @server.feature(types.TEXT_DOCUMENT_DOCUMENT_SYMBOL)
    def document_symbol(ls: FakeLanguageServer, params: Any) -> list[Any]:
        return []

    @server.feature(types.TEXT_DOCUMENT_PREPARE_CALL_HIERARCHY)
    def prepare_call_hierarchy(ls: FakeLanguageServer, params: Any) -> list[Any]:
        return []

    @server.feature(types.CALL_HIERARCHY_INCOMING_CALLS)
    def incoming_calls(ls: FakeLanguageServer, params: Any) -> list[Any]:
        return []

    @server.feature(types.CALL_HIERARCHY_OUTGOING_CALLS)
    def outgoing_calls(ls: FakeLanguageServer, params: Any) -> list[Any]:
        return []

    @server.feature(types.WORKSPACE_SYMBOL)
    def workspace_symbol(ls: FakeLanguageServer, params: Any) -> list[Any]:
        return []

    @server.feature("fake/echo")
    def echo(ls: FakeLanguageServer, params: Any) -> Any:
        return params

    @server.feature("fake/documentText")
    def document_text(ls: FakeLanguageServer, params: Any) -> dict[str, Any]:
        return {doc.uri: {"text": doc.source, "version": doc.version} for doc in ls.workspace.text_documents.values()}

    @server.feature("fake/log")
    def log(ls: FakeLanguageServer, params: Any) -> list[list[Any]]:
        return ls.protocol.fake_notifications

    @server.feature("fake/requests")
    def requests(ls: FakeLanguageServer, params: Any) -> list[list[Any]]:
        return ls.protocol.fake_requests

    @server.feature("fake/notifyMe")
    def notify_me(ls: FakeLanguageServer, params: Any) -> dict[str, int]:
        count = int(params.get("count", 1)) if isinstance(params, dict) else 1
        for index in range(count):
            ls.protocol.fake_notify("window/logMessage", {"type": 3, "message": f"notify {index}"})
        return {"sent": count}

    @server.feature("fake/askClient")
    async def ask_client(ls: FakeLanguageServer, params: Any) -> dict[str, Any]:
        return await ls.protocol.fake_ask(params["method"], params.get("params"))

    @server.feature("fake/registerCapability")
    async def register_capability(ls: FakeLanguageServer, params: Any) -> dict[str, Any]:
        registrations = (params or {}).get("registrations", FAKE_DEFAULT_REGISTRATIONS)
        return await ls.protocol.fake_ask("client/registerCapability", {"registrations": registrations})

    @server.feature("fake/progress")
    async def progress(ls: FakeLanguageServer, params: Any) -> dict[str, Any]:
        token = (params or {}).get("token") or f"fake-progress-{uuid.uuid4()}"
        created = await ls.protocol.fake_ask("window/workDoneProgress/create", {"token": token})
        if "error" in created:
            return {"token": token, **created}
        for value in (
            {"kind": "begin", "title": "fake work", "percentage": 0},
            {"kind": "report", "message": "halfway", "percentage": 50},
            {"kind": "end", "message": "done"},
        ):
            if value["kind"] == "end" and (params or {}).get("unfinished"):
                break  # a server that dies before it ends its progress
            ls.protocol.fake_notify("$/progress", {"token": token, "value": value})
        return {"token": token}


def fake_register_editing(server: FakeLanguageServer) -> None:
    """Install the features that make edits: a command applying one, and rename."""

    @server.command("fake.applyEdit")
    async def apply_edit(ls: FakeLanguageServer, *args: Any) -> Any:
        spec = args[0] if args and isinstance(args[0], dict) else {}
        wait_for = spec.get("waitFor")
        while wait_for and not any(m == wait_for for m, _ in ls.protocol.fake_requests):
            await asyncio.sleep(0.01)
        answer = await ls.protocol.fake_ask("workspace/applyEdit", {"edit": spec.get("edit", {})})
        ls.protocol.fake_answers.append(answer)
        return answer

    @server.feature("fake/answers")
    def answers(ls: FakeLanguageServer, params: Any) -> list[Any]:
        return ls.protocol.fake_answers

    @server.feature(types.TEXT_DOCUMENT_RENAME)
    def rename(ls: FakeLanguageServer, params: types.RenameParams) -> types.WorkspaceEdit | None:
        document = fake_open_document(ls, params.text_document.uri)
        if document is None:
            return None
        span = types.Range(types.Position(0, 0), types.Position(1, 0))
        ident = types.OptionalVersionedTextDocumentIdentifier(uri=document.uri, version=document.version)
        change = types.TextDocumentEdit(text_document=ident, edits=[types.TextEdit(span, params.new_name + "\n")])
        return types.WorkspaceEdit(document_changes=[change])


def fake_parse_args(argv: list[str]) -> tuple[FakeBehaviour, Path | None, Path | None]:
    """Behaviour plus the pid and count files from the command line."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--crash-after", type=int)
    parser.add_argument("--crash-on-initialize", action="store_true")
    parser.add_argument("--hang-on", action="append", default=[], metavar="METHOD")
    parser.add_argument("--slow", type=int, default=0, metavar="MS")
    parser.add_argument("--garbage-after", type=int)
    parser.add_argument("--flood", type=int, default=0)
    parser.add_argument("--exit-on-didopen", action="store_true")
    parser.add_argument("--pid-file", type=Path)
    parser.add_argument("--count-file", type=Path)
    parser.add_argument("--crash-while-exists", type=Path, metavar="PATH")
    args = parser.parse_args(argv)
    behaviour = FakeBehaviour(
        crash_after=args.crash_after,
        crash_on_initialize=args.crash_on_initialize,
        hang_on=frozenset(args.hang_on),
        slow_ms=args.slow,
        garbage_after=args.garbage_after,
        flood=args.flood,
        exit_on_didopen=args.exit_on_didopen,
        crash_while_exists=args.crash_while_exists,
    )
    return behaviour, args.pid_file, args.count_file


def fake_write_atomically(path: Path, text: str) -> None:
    """Write text so a test polling for the file never reads it half-written."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with temporary.open("w", encoding="utf-8") as out:
        out.write(text)
        out.flush()
        os.fsync(out.fileno())
    os.replace(temporary, path)


def fake_main(argv: list[str]) -> None:
    """Record the start, then serve over stdio."""
    behaviour, pid_file, count_file = fake_parse_args(argv)
    if pid_file is not None:
        fake_write_atomically(pid_file, f"{os.getpid()}\n")
    if count_file is not None:
        with count_file.open("a", encoding="utf-8") as starts:
            starts.write(f"{os.getpid()}\n")
    server = FakeLanguageServer(behaviour)
    fake_register_features(server)
    fake_register_editing(server)
    server.start_io()


if __name__ == "__main__":
    fake_main(sys.argv[1:])
