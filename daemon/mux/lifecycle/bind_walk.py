"""Asking a server, file by file and on the daemon's own behalf, to parse and bind its workspace.

A pyright that has discovered its workspace has read the file list but parsed only the open files
and what they import. The first cross-file question about a symbol nobody asked about before
(`references` on tornado's `utf8`) then spends about a third of its time tokenizing, parsing and
binding files nobody had opened (issue 21). The adapter names a short per-file request that does
that work (`Adapter.bind_file_request`: pyright's documentSymbol); the daemon asks it for every
workspace file once per server process, and for the files of a workspace folder added, after
discovery ends: the files the server itself enumerates (`Adapter.source_files`; pyright answers
documentSymbol of a file it does not track with [] and parses nothing), in path order, until
`prebind_max_files` are bound in the process (each holds server memory for its life). The
answers are dropped: never cached (the entries carry no cache key), never forwarded (they are
internal entries).

No client waits for work nobody asked: a request goes out only when nothing at all is in flight at
the server (a client's, the learner's or another of the daemon's own), the learner is not about to
send one (both hold the instance's `own_slot` around each request: own_slot.py) and no client has
sent anything for `QUIET_S`; the conditions are looked at again before every file, so a client that
speaks stops the walk after the one file in flight, and it resumes at the next quiet moment.
A full index run of any root is waited for too (`BindWalk.gives_way`, which the daemon points at
its indexes, app.py), as learning waits for it: a second worktree or a clone indexed right after
its repository wants the cores for its new texts' embeddings, and binding the new root's files
meanwhile made it searchable later (issue 23, docs/benchmarks.md); the files the run's
documentSymbol had this process answer are skipped afterwards.
pyright also postpones a scheduled background analysis (an open file's diagnostics) to 250 ms
after each request it is asked (`recordUserInteractionTime`); those are scheduled when a document
changes or a file event arrives, so the walk waits `QUIET_S` after the daemon's own
notifications as well as after a client's messages, and the analysis starts before it resumes. A
client's question waits behind one file's request at most (tornado: 31 ms at most, 5 ms in the
median), never behind the whole workspace, as a single workspace-wide request (a `workspace/symbol`
query) would make it: pyright reads no message while it computes one.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from lensmux.adapters.base import Adapter
from lensmux.daemon.mux.errors import ServerUnavailable
from lensmux.daemon.paths import uri_to_path
from lensmux.daemon.wire import envelope as ev

if TYPE_CHECKING:
    from lensmux.daemon.mux.instance import Instance

log = logging.getLogger(__name__)

# How long no client may have sent anything before the daemon asks its next file.
QUIET_S = 0.3
# How often the conditions are looked at while a client is busy.
_WAIT_POLL_S = 0.05
# For an adapter that cannot list its server's sources (`Adapter.source_files`), the folders no
# language server analyses as sources, as pyright 1.1.414 auto-excludes them: hidden ones,
# dependencies, caches, editable-install shims, and virtual environments, known by what they
# hold (its SourceEnumerator's markers).
_SKIPPED_DIRS = frozenset({"node_modules", "__pycache__"})
_VENV_MARKERS = (("bin", "activate"), ("Scripts", "activate"), ("pyvenv.cfg",), ("conda-meta",))


class BindWalk:
    """How far one instance's server is through binding its workspace files (`lensmux status`)."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        # Created on first wait: built before any event loop runs in unit tests.
        self._due_event: anyio.Event | None = None
        self._due = False
        # URIs this server process has parsed and bound for the walk or for the index run.
        self.bound: set[str] = set()
        # The URIs of the files the server enumerates as its sources, as the last walk listed them:
        # it answers about them unopened as opened (daemon/search/gateway.py asks so).
        self.sources: frozenset[str] = frozenset()
        self.state = "pending" if enabled else "off"
        # The daemon's own work the walk waits for: a full index run of any root (set by app.py).
        self.gives_way: Callable[[], bool] = _nothing

    def restart(self) -> None:
        """A new server process: it has bound nothing yet."""
        self.bound.clear()
        self.due()

    def due(self) -> None:
        """A new server process, or a folder added: its files are to be walked."""
        if not self.enabled:
            return
        self._due = True
        self.state = "pending"
        if self._due_event is not None:
            self._due_event.set()
            self._due_event = None

    def answered(self, uri: str) -> None:
        """The server answered a documentSymbol for this file in this process (the index run's)."""
        self.bound.add(uri)

    async def wait_due(self) -> None:
        """Return once there are files to walk, and take the order."""
        while not self._due:
            if self._due_event is None:
                self._due_event = anyio.Event()
            await self._due_event.wait()
        self._due = False

    @property
    def is_due(self) -> bool:
        """A folder was added (or the process restarted) since the walk took its file list."""
        return self._due

    def status(self) -> str:
        """off, pending, `walked/total files`, done, or why it stopped."""
        return self.state


def _nothing() -> bool:
    return False


def workspace_files(adapter: Adapter, roots: list[Path]) -> list[Path]:
    """The files of `roots` the server enumerates as sources, as its adapter lists them (sorted).

    An adapter that cannot say: every file under them, hidden and dependency folders left out.
    """
    found: set[Path] = set()
    for root in roots:
        listed = adapter.source_files(root)
        if listed is not None:
            found.update(listed)
            continue
        for folder, dirs, files in os.walk(root):
            dirs[:] = sorted(d for d in dirs if not _skipped(Path(folder) / d))
            found.update(Path(folder) / f for f in files if not f.startswith("."))
    return sorted(found)


def _skipped(folder: Path) -> bool:
    name = folder.name
    if name.startswith(".") or name.startswith("__editable__.") or name in _SKIPPED_DIRS:
        return True
    return any(folder.joinpath(*marker).exists() for marker in _VENV_MARKERS)


def _roots(inst: Instance) -> list[Path]:
    """The instance root (when the server has it as a workspace folder) and every folder added."""
    roots = [inst.key.root] if inst.key.workspace else []
    for folder in inst.folders.extra():
        path = uri_to_path(folder["uri"])
        if path is not None and path.is_dir():
            roots.append(path)
    return roots


def binds_files(adapter: Adapter) -> bool:
    """Whether the adapter names a per-file binding request at all (its class overrides the hook)."""
    return type(adapter).bind_file_request is not Adapter.bind_file_request


async def bind_walk_task(inst: Instance) -> None:
    """Walk the workspace's files whenever that is due, for the life of one server process."""
    walk = inst.warmup.bind_walk
    if not walk.enabled:
        return
    while True:
        await walk.wait_due()
        # Listed as soon as discovery ends, not at the first quiet moment: searches and learning ask
        # about these files unopened (`sources`), and a learner asking all the time leaves few.
        await _until_discovered(inst)
        files = await anyio.to_thread.run_sync(workspace_files, inst.adapter, _roots(inst))
        asks = [(p.as_uri(), ask) for p in files if (ask := inst.adapter.bind_file_request(p)) is not None]
        walk.sources = frozenset(uri for uri, _ in asks)
        cap = inst.config.prebind_max_files
        log.info(
            "%s: binding %d workspace files ahead (at most %d), one at a time in quiet moments",
            inst.name,
            len(asks),
            cap,
        )
        walk.state = await _walk(inst, walk, asks, cap)
        log.info("%s: bind walk %s", inst.name, walk.state)


async def _walk(inst: Instance, walk: BindWalk, asks: list[tuple[str, tuple[str, dict[str, Any]]]], cap: int) -> str:
    """Ask each file not yet bound, one at a time in quiet moments, up to `cap` bound; "done" or why it stopped."""
    walked = sum(uri in walk.bound for uri, _ in asks)
    for uri, (method, params) in asks:
        if walk.is_due:
            # A folder was added meanwhile: the next walk takes the new list, skipping what is bound.
            return "pending"
        if uri in walk.bound:
            continue
        if walked >= cap:
            # What the index run had bound counts too: the cap is on the server's memory.
            return f"{walked}/{len(asks)} files (cap)"
        walk.state = f"{walked}/{len(asks)} files"
        await _until_quiet(inst, slot=True)
        try:
            failure = await _ask(inst, method, params)
        finally:
            inst.own_slot.give_back()
        if failure is not None:
            return f"stopped: {failure}"
        walk.bound.add(uri)
        walked += 1
    return "done"


def _discovered(inst: Instance) -> bool:
    """Whether the server is ready and has discovered its workspace, and no index run goes on.

    busy(): discovery not ended, or the server still analysing the workspace (warmup.py).
    """
    return inst.ready and not inst.warmup.busy() and not inst.warmup.bind_walk.gives_way()


async def _until_discovered(inst: Instance) -> None:
    """Wait until `_discovered`."""
    while not _discovered(inst):  # noqa: ASYNC110
        await anyio.sleep(_WAIT_POLL_S)


async def _until_quiet(inst: Instance, *, slot: bool = False) -> None:
    """Wait until the server is ready, has discovered its workspace, has nothing in flight, clients are quiet and no
    index run goes on.

    With `slot`, also until the instance's own-request slot is free, and return holding it: a
    learning request waiting for it goes first (it asked first), and quiet is looked at again.
    Polled: quiet is the absence of events (no client message for a while), which no event marks.
    """
    while True:
        if (
            _discovered(inst)
            and len(inst.pending) == 0
            and inst.quiet_for(QUIET_S)
            and time.monotonic() - inst.notified_at >= QUIET_S
            and (not slot or inst.own_slot.try_take())
        ):
            return
        await anyio.sleep(_WAIT_POLL_S)


async def _ask(inst: Instance, method: str, params: dict[str, Any]) -> str | None:
    """Send one file's request and wait for its answer, which is dropped; None, or why the walk must stop."""
    entry = inst.pending.add_internal(method, background=True)
    inst.own_slot.sent(inst.pending, method)
    assert entry.done is not None
    log.debug("%s: bind walk: asking %s (server id %d)", inst.name, method, entry.server_id)
    try:
        await inst.send_to_server(ev.request(entry.server_id, method, ev.encode_value(params)))
    except ServerUnavailable as exc:
        inst.pending.pop(entry.server_id)
        return str(exc)
    with anyio.move_on_after(inst.config.timeouts.for_method(method)):
        await entry.done.wait()
    if not entry.done.is_set():
        if inst.pending.pop(entry.server_id) is not None:
            await inst.cancel_at_server(entry.server_id, method, "bind walk request timed out")
        return f"{method} timed out"
    if entry.failure is not None:
        return entry.failure
    assert entry.reply is not None
    err = ev.error_of(entry.reply.error)
    if err is not None:
        # One file's error (deleted since the walk listed it, unreadable) is that file's, not the walk's.
        log.debug("%s: bind walk: %s answered error %d: %s", inst.name, method, err.code, err.message)
    return None
