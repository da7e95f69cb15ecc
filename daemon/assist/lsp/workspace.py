"""One tool call's view of a workspace root: its files, their texts, its servers.

Texts come from the daemon's open documents when an editor holds them (that
is what the server answers from) and from disk otherwise; every file whose
open text differs from disk is remembered, so the answer can say an unsaved
buffer was used. Server calls wait a bounded time for a restarting server and
fail fast behind an open breaker: a tool never hangs its session.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread

from lensmux.daemon.assist.errors import ToolError
from lensmux.daemon.assist.lsp.positions import display_path, split_lines
from lensmux.daemon.mux.documents.documents import INTERNAL_HOLDER
from lensmux.daemon.mux.errors import CircuitOpen, InstanceError, RequestTimedOut, ServerRequestFailed
from lensmux.daemon.mux.instance import Instance
from lensmux.daemon.mux.internal_client import InternalClient
from lensmux.daemon.paths import uri_to_path

log = logging.getLogger(__name__)

# A restarting server gets this long to come back before the tool says so.
READY_WAIT = 10.0
# No single server request of a tool waits longer (MCP clients time out at 60 s).
REQUEST_WAIT = 20.0
# A cross-file question waits this long for a just-started server to find the workspace's files.
DISCOVERY_WAIT = 8.0
# The bounded walk behind symbol lookups by name and server discovery.
SCAN_MAX_FILES = 20_000
SCAN_MAX_BYTES = 1_000_000
_SKIP_DIRS = {"node_modules", "__pycache__", "build", "dist", "target", "venv", ".venv", "out"}


def _walk(root: Path, suffixes: frozenset[str]) -> list[Path]:
    found: list[Path] = []
    seen = 0
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and d not in _SKIP_DIRS)
        for name in sorted(filenames):
            seen += 1
            if seen > SCAN_MAX_FILES:
                return found
            if Path(name).suffix.lower() in suffixes:
                found.append(Path(dirpath) / name)
    return found


def _files_mentioning(files: list[Path], word: str, fold: bool) -> list[Path]:
    needle = word.lower().encode() if fold else word.encode()
    out = []
    for path in files:
        try:
            if path.stat().st_size > SCAN_MAX_BYTES:
                continue
            data = path.read_bytes()
            if needle in (data.lower() if fold else data):
                out.append(path)
        except OSError:
            continue
    return out


class Workspace:
    """Files, texts and server access for one tool call on one root."""

    def __init__(self, internal: InternalClient, root: Path) -> None:
        self.internal = internal
        self.root = root
        self.unsaved: set[str] = set()
        self._lines: dict[Path, list[str]] = {}
        self._sources: list[Path] | None = None

    # -- files -------------------------------------------------------------

    def rel(self, path: Path) -> str:
        """The path as tools show it."""
        return display_path(path, self.root)

    def file(self, given: str) -> Path:
        """A tool's `file` argument as an existing file under the root."""
        if not isinstance(given, str) or not given.strip():
            raise ToolError("`file` must be a path relative to the workspace root (or absolute)")
        path = Path(given).expanduser()
        path = (path if path.is_absolute() else self.root / path).resolve()
        if not path.is_relative_to(self.root):
            raise ToolError(
                f"{given} is outside the workspace root {self.root}; give a file inside it "
                "(or start lensmux mcp with --root on the other project)"
            )
        if not path.is_file():
            raise ToolError(
                f"no such file: {given} (paths are relative to {self.root}); "
                "use workspace_symbols or search_code to find the right file"
            )
        if self.internal.server_for(path) is None:
            raise ToolError(f"no language server is configured for {self.rel(path)}")
        return path

    async def source_files(self) -> list[Path]:
        """Files under the root that some configured server handles (bounded walk, once per call)."""
        if self._sources is not None:
            return self._sources
        suffixes = frozenset(
            ext.lower() for cfg in self.internal.servers() for exts in cfg.languages.values() for ext in exts
        )
        self._sources = await anyio.to_thread.run_sync(_walk, self.root, suffixes)
        return self._sources

    async def files_mentioning(self, word: str, files: list[Path] | None = None, *, fold: bool = False) -> list[Path]:
        """Source files whose text contains `word` (ignoring case with `fold`)."""
        pool = files if files is not None else await self.source_files()
        return await anyio.to_thread.run_sync(_files_mentioning, pool, word, fold)

    async def servers_present(self) -> list[Instance]:
        """An instance of each configured server that has files under the root."""
        seen: dict[str, Path] = {}
        for path in await self.source_files():
            cfg = self.internal.server_for(path)
            if cfg is not None and cfg.name not in seen:
                seen[cfg.name] = path
        out = []
        for path in seen.values():
            inst = self.internal.instance_for(path, self.root)
            if inst is not None:
                out.append(inst)
        return out

    # -- texts -------------------------------------------------------------

    async def lines(self, path: Path) -> list[str]:
        """The lines the server sees for `path`: an editor's open text, else the disk."""
        cached = self._lines.get(path)
        if cached is not None:
            return cached
        text = None
        inst = self.internal.existing_instance_for(path, self.root)
        doc = inst.documents.get(path.as_uri()) if inst is not None else None
        disk: str | None
        try:
            disk = await anyio.Path(path).read_text(encoding="utf-8", errors="replace")
        except OSError:
            disk = None
        if doc is not None and any(holder != INTERNAL_HOLDER for holder in doc.holders):
            text = doc.text
            if disk is not None and disk != text:
                self.unsaved.add(self.rel(path))
        if text is None:
            text = disk or ""
        lines = split_lines(text)
        self._lines[path] = lines
        return lines

    async def lines_of_uri(self, uri: str) -> tuple[Path | None, list[str]]:
        """The local path of a URI and its lines."""
        path = uri_to_path(uri)
        if path is None:
            return None, []
        return path, await self.lines(path)

    # -- servers -----------------------------------------------------------

    def instance(self, path: Path) -> Instance:
        """The shared instance for `path` (started if needed)."""
        inst = self.internal.instance_for(path, self.root)
        if inst is None:
            raise ToolError(f"no language server is configured for {self.rel(path)}")
        return inst

    async def open(self, inst: Instance, path: Path) -> str:
        """Make sure the server has `path` open; its URI."""
        await self._ready(inst)
        try:
            return await self.internal.ensure_open(inst, path)
        except OSError as exc:
            raise ToolError(f"cannot read {self.rel(path)}: {exc}") from exc

    async def _ready(self, inst: Instance) -> None:
        server = inst.key.server
        if inst.stopped and inst.failure is not None:
            raise ToolError(f"{server} for {self.root} has failed ({inst.failure}); see `lensmux status`")
        if inst.breaker.state.value == "open" and not inst.breaker.ready_for_restart():
            raise ToolError(f"{server} is failing ({inst.breaker.rejection()}); try again in a minute")
        if not await inst.wait_ready(READY_WAIT):
            raise ToolError(
                f"{server} for {self.root} is not ready ({inst.state}: starting or restarting); "
                "try again in a few seconds"
            )

    async def discovered(self, inst: Instance) -> None:
        """Wait (bounded) until the server has found the workspace's files.

        A server asked right after it started answers references and renames
        from the files it has found so far (mux/lifecycle/warmup.py): a rename preview
        would silently miss files.
        """
        with anyio.move_on_after(DISCOVERY_WAIT):
            # The warm-up state is derived when asked (busy() advances it, including a
            # quiet period for servers that signal nothing), so there is no event to wait on.
            while inst.warmup.busy() and inst.warmup.warming:  # noqa: ASYNC110
                await anyio.sleep(0.05)

    async def request(self, inst: Instance, method: str, params: dict[str, Any]) -> Any:
        """A request through the shared instance; a ToolError the model can act on if it fails."""
        await self._ready(inst)
        server = inst.key.server
        limit = min(inst.config.timeouts.for_method(method), REQUEST_WAIT)
        try:
            return await inst.request(method, params, limit)
        except CircuitOpen as exc:
            raise ToolError(f"{server} is failing ({exc}); try again in a minute") from exc
        except RequestTimedOut as exc:
            raise ToolError(
                f"{server} did not answer {method} within {limit:g}s (it may still be indexing); try again shortly"
            ) from exc
        except ServerRequestFailed as exc:
            if exc.code == -32601:
                raise ToolError(f"{server} does not support {method}") from exc
            raise ToolError(f"{server} could not answer: {exc}") from exc
        except InstanceError as exc:
            raise ToolError(f"{server} is unavailable ({exc}); try again in a few seconds") from exc

    async def workspace_symbol(self, inst: Instance, query: str) -> list[Any]:
        """workspace/symbol as a list (empty when the server knows nothing yet)."""
        result = await self.request(inst, "workspace/symbol", {"query": query})
        return result if isinstance(result, list) else []

    def server_name(self, path: Path) -> str | None:
        """The configured server that handles `path`."""
        cfg = self.internal.server_for(path)
        return cfg.name if cfg else None

    def note(self) -> str:
        """The sentence an answer ends with when it used unsaved editor text."""
        if not self.unsaved:
            return ""
        names = ", ".join(sorted(self.unsaved))
        return f"\n(Used unsaved editor changes in {names}: the text differs from the file on disk.)"
