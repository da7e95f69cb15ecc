"""One session of `bench.mux.root_policy`: a server started directly on one root, and what it answers.

The server is started with the daemon's own command for it (lsp-configs, `lensmux.adapters`),
initialized for `root` by the test suite's independent client with an editor's capabilities,
and its `workspace/configuration` requests get the daemon's configured answers, so the only
thing that differs between the two sessions of a layout is the root. The client opens the
layout's document at once, as an editor does, and the session records, with every path made
relative to the layout (`<L>/repo/...`):

- readiness: seconds from spawn to pyright's "Found N source files" log line, or to the end of
  clangd's background index (when it runs one), and to the document's first diagnostics;
- the resident memory of the server's process group, at its peak and at the end;
- the document's settled diagnostics, hover and definition at each lookup, references to the
  sub-project's function, workspace symbols for a name defined inside and outside it;
- the server's log lines (window/logMessage, stderr) and its dynamic registrations.
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path
from typing import Any

import anyio
from support.daemon_proc import VENV_BIN
from support.lsp_connection import LspTimeout
from support.lsp_defaults import initialize_params
from support.lspclient import LspClient, LspResponseError

from bench.mux.root_layouts import Layout, Probe
from bench.stats import group_rss_kib
from lensmux.adapters.registry import adapter_for
from lensmux.adapters.spec import ServerConfig

INDEX_TOKEN = "backgroundIndexProgress"
_ENUMERATED = re.compile(r"^(Found \d+ source files?|No source files found)")
_DURATION = re.compile(r"\b\d+(\.\d+)?\s?(ms|sec|s)\b")
_CLANGD_STAMP = re.compile(r"^([EIVW])\[[\d:.]+\]")


class RootSessionError(Exception):
    """A server did not start or answer as a session needs."""


class Normaliser:
    """Paths of one layout copy as `<L>/...`, durations as `#ms`."""

    def __init__(self, base: Path) -> None:
        self._base = str(base.resolve())
        self._uri = base.resolve().as_uri()

    def text(self, value: str) -> str:
        """A string with the layout's URIs and paths replaced, and durations blanked."""
        value = _CLANGD_STAMP.sub(r"\1[#]", value.replace(self._uri, "<L>").replace(self._base, "<L>"))
        return _DURATION.sub("#ms", value)

    def value(self, value: Any) -> Any:
        """Any JSON value with every string normalised."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, list):
            return [self.value(v) for v in value]
        if isinstance(value, dict):
            return {k: self.value(v) for k, v in value.items()}
        return value

    def location(self, loc: dict[str, Any]) -> str:
        """`<L>/path:line:col` of a Location or LocationLink (1-based)."""
        uri = loc.get("uri") or loc.get("targetUri", "")
        rng = loc.get("range") or loc.get("targetSelectionRange") or {}
        start = rng.get("start", {})
        return f"{self.text(uri)}:{start.get('line', -1) + 1}:{start.get('character', -1) + 1}"


def _first_diagnostics(client: LspClient, uri: str) -> Any:
    return client.wait_notification("textDocument/publishDiagnostics", lambda p: p.get("uri") == uri, timeout=180)


async def _settled_diagnostics(client: LspClient, uri: str, quiet: float = 1.5, limit: float = 30) -> list[Any]:
    """The document's diagnostics once no new report has arrived for `quiet` seconds."""
    deadline = time.monotonic() + limit
    seen = -1
    while time.monotonic() < deadline:
        reports = [p for p in client.notifications_of("textDocument/publishDiagnostics") if p.get("uri") == uri]
        if len(reports) == seen:
            return list(reports[-1]["diagnostics"]) if reports else []
        seen = len(reports)
        await anyio.sleep(quiet)
    reports = [p for p in client.notifications_of("textDocument/publishDiagnostics") if p.get("uri") == uri]
    return list(reports[-1]["diagnostics"]) if reports else []


def _diagnostic_lines(diagnostics: list[Any], norm: Normaliser) -> list[str]:
    lines = []
    for d in diagnostics:
        start = d["range"]["start"]
        code = d.get("code") or (d.get("data") or {}).get("rule") or ""
        message = norm.text(d["message"]).replace("\n", " / ")
        lines.append(f"{start['line'] + 1}:{start['character'] + 1} sev{d.get('severity')} {code} {message}".strip())
    return sorted(lines)


def _hover_text(result: Any, norm: Normaliser) -> str:
    if not result:
        return "(none)"
    contents = result.get("contents")
    if isinstance(contents, dict):
        text = contents.get("value", "")
    elif isinstance(contents, list):
        text = " | ".join(c if isinstance(c, str) else c.get("value", "") for c in contents)
    else:
        text = str(contents)
    return norm.text(" ".join(text.split()))


def _locations(result: Any, norm: Normaliser) -> list[str]:
    if not result:
        return []
    items = result if isinstance(result, list) else [result]
    return sorted(norm.location(loc) for loc in items)


def _symbols(result: Any, norm: Normaliser) -> list[str]:
    out = []
    for s in result or []:
        location = s.get("location") or {}
        where = norm.location(location) if "range" in location else norm.text(location.get("uri", ""))
        out.append(f"{s.get('name')} kind{s.get('kind')} in {s.get('containerName') or '-'} at {where}")
    return sorted(out)


async def _ask(client: LspClient, method: str, params: Any) -> Any:
    try:
        return await client.request(method, params, timeout=120)
    except LspResponseError as exc:
        return {"error": str(exc)}


async def _lookups(client: LspClient, base: Path, uri: str, probes: tuple[Probe, ...], norm: Normaliser) -> Any:
    out: dict[str, Any] = {}
    for probe in probes:
        where = {"textDocument": {"uri": uri}, "position": probe.position(base)}
        out[probe.label] = {
            "hover": _hover_text(await _ask(client, "textDocument/hover", where), norm),
            "definition": _locations(await _ask(client, "textDocument/definition", where), norm),
        }
    return out


class _Clock:
    """When the readiness signals arrived, in seconds since spawn, and the peak group RSS."""

    def __init__(self, started: float) -> None:
        self.started = started
        self.enumerated: float | None = None
        self.index_end: float | None = None
        self.first_diagnostics: float | None = None
        self.peak_rss_kib = 0

    def since(self) -> float:
        return round(time.monotonic() - self.started, 2)


async def _sample_rss(client: LspClient, clock: _Clock, stop: anyio.Event) -> None:
    while not stop.is_set() and client.pid is not None:
        clock.peak_rss_kib = max(clock.peak_rss_kib, group_rss_kib(client.pid))
        with anyio.move_on_after(0.2):
            await stop.wait()


async def _wait_ready(client: LspClient, layout: Layout, uri: str, clock: _Clock) -> None:
    """Until the document's first diagnostics and the server's own end of discovery."""

    async def diagnostics() -> None:
        await _first_diagnostics(client, uri)
        clock.first_diagnostics = clock.since()

    async def enumerated() -> None:
        await client.wait_notification(
            "window/logMessage", lambda p: bool(_ENUMERATED.match(p["message"])), timeout=180
        )
        clock.enumerated = clock.since()

    async def indexed() -> None:
        # clangd runs a background index only where it found a compile database.
        try:
            await client.wait_notification(
                "$/progress", lambda p: p.get("token") == INDEX_TOKEN and p["value"]["kind"] == "begin", timeout=8
            )
        except LspTimeout:
            return
        await client.wait_notification(
            "$/progress", lambda p: p.get("token") == INDEX_TOKEN and p["value"]["kind"] == "end", timeout=300
        )
        clock.index_end = clock.since()

    async with anyio.create_task_group() as tg:
        tg.start_soon(diagnostics)
        tg.start_soon(enumerated if layout.server == "pyright" else indexed)


async def _initialize(client: LspClient, root: Path, folders: tuple[Path, ...], config: ServerConfig) -> None:
    """`initialize` for `root`, naming `folders` as further workspace folders (as a multi-root editor does)."""
    params = initialize_params(
        root,
        client_name=client.name,
        capabilities=None,
        workspace_folders=True,
        process_id=None,
        initialization_options=config.initialization_options or None,
    )
    params["workspaceFolders"] += [{"uri": f.as_uri(), "name": f.name} for f in folders]
    client.workspace_folders = params["workspaceFolders"]
    await client.request("initialize", params, timeout=120)
    await client.notify("initialized", {})


async def run_session(
    layout: Layout, base: Path, root: Path, config: ServerConfig, folders: tuple[Path, ...] = ()
) -> dict[str, Any]:
    """One direct session on `root` (and `folders`) of the layout written at `base`; what the client was told."""
    adapter = adapter_for(config)
    norm = Normaliser(base)
    argv = adapter.command(root, os.getpid())
    env = {"PATH": f"{VENV_BIN}:{os.environ.get('PATH', '')}", **config.env}
    clock = _Clock(time.monotonic())
    stop = anyio.Event()
    async with (
        LspClient.over_process(argv, cwd=root, env=env, name=f"{layout.name}@{root.name}") as client,
        anyio.create_task_group() as tg,
    ):
        client.on_server_request("workspace/configuration", lambda p: adapter.configuration(p.get("items", [])))
        tg.start_soon(_sample_rss, client, clock, stop)
        await _initialize(client, root, folders, config)
        document = base / layout.document
        uri = await client.open(document, layout.language)
        await _wait_ready(client, layout, uri, clock)
        ready_rss = group_rss_kib(client.pid or 0)
        observed: dict[str, Any] = {
            "diagnostics": _diagnostic_lines(await _settled_diagnostics(client, uri), norm),
            "lookups": await _lookups(client, base, uri, layout.lookups, norm),
        }
        refs = {
            "textDocument": {"uri": (base / layout.references.file).as_uri()},
            "position": layout.references.position(base),
            "context": {"includeDeclaration": True},
        }
        if layout.references.file != layout.document:
            await client.open(base / layout.references.file, layout.language)
        asked_at = time.monotonic()
        observed["references"] = _locations(await _ask(client, "textDocument/references", refs), norm)
        references_s = round(time.monotonic() - asked_at, 2)
        asked_at = time.monotonic()
        observed["workspace_symbols"] = _symbols(await _ask(client, "workspace/symbol", {"query": layout.symbol}), norm)
        symbols_s = round(time.monotonic() - asked_at, 2)
        end_rss = group_rss_kib(client.pid or 0)
        stop.set()
        observed["log"] = sorted(
            {norm.text(p["message"]) for p in client.notifications_of("window/logMessage")}
            | {norm.text(line) for line in client.stderr_lines if line.strip()}
        )
        observed["source_files"] = [
            norm.text(p["message"])
            for p in client.notifications_of("window/logMessage")
            if _ENUMERATED.match(p["message"])
        ]
        observed["registrations"] = sorted(
            {
                norm.text(str(reg.get("method")) + " " + str(norm.value(reg.get("registerOptions"))))
                for method, params in client.server_requests
                if method == "client/registerCapability"
                for reg in params.get("registrations", [])
            }
        )
        await client.shutdown_and_exit()
    return {
        "root": norm.text(str(root)),
        "observed": observed,
        "numbers": {
            "enumerated_s": clock.enumerated,
            "index_end_s": clock.index_end,
            "first_diagnostics_s": clock.first_diagnostics,
            "references_s": references_s,
            "workspace_symbol_s": symbols_s,
            "ready_rss_mib": round(ready_rss / 1024, 1),
            "end_rss_mib": round(end_rss / 1024, 1),
            "peak_rss_mib": round(max(clock.peak_rss_kib, end_rss) / 1024, 1),
        },
    }
