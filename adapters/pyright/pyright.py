"""pyright: configuration sections, analysis progress, workspace discovery and broken cancels."""

from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import Any

import msgspec

from lensmux.adapters.base import Adapter
from lensmux.adapters.capabilities import declared
from lensmux.adapters.pyright import (
    pyright_completion_docs,
    pyright_definitions,
    pyright_hover,
    pyright_launch,
    pyright_locale,
    pyright_signatures,
    pyright_sources,
    pyright_tags,
)
from lensmux.adapters.pyright.pyright_symbols import PyrightSymbolKeys

log = logging.getLogger(__name__)

# pyright's last word on enumerating the workspace ("Found 12 source files",
# "No source files found."), logged at information level.
_ENUMERATED = re.compile(r"^(Found \d+ source files?|No source files found)")
# pyright logs nothing at these levels, so the daemon cannot see discovery end.
_QUIET_LOG_LEVELS = frozenset({"warning", "error"})
# The progress pyright creates as it starts on a request, by title in any of its languages, and
# that request's method.
_REQUEST_PROGRESS = dict.fromkeys(pyright_locale.FINDING_REFERENCES, "textDocument/references")


class PyrightAdapter(Adapter):
    """pyright pulls `python`, `python.analysis` and `pyright` sections; its log tells when discovery ends."""

    # onReferences and onExecuteCommand cancel the previous request's token source
    # first; a source cancelled before it handed out its token throws there
    # ("this._token.cancel is not a function") before it is cleared, so every
    # later request of that method fails until the process restarts.
    uncancellable = frozenset({"textDocument/references", "workspace/executeCommand"})
    # pyright enumerates a workspace's files only in its analysis timer, 250 ms after the last
    # of these from any client (each calls its recordUserInteractionTime, which starts the timer
    # again); until then it answers the second group from the open files and what they import
    # (they walk the program's file list). Next to a client that never pauses, a shared pyright
    # would never discover its workspace: these wait for it (daemon/mux/lifecycle/discovery.py).
    waits_for_discovery = frozenset(
        {
            "textDocument/didChange",
            "textDocument/definition",
            "textDocument/declaration",
            "textDocument/typeDefinition",
            "textDocument/documentSymbol",
            "textDocument/codeAction",
        }
        | {
            "textDocument/references",
            "textDocument/rename",
            "workspace/symbol",
            "callHierarchy/incomingCalls",
            "textDocument/completion",
        }
    )
    # pyright answers renames with `documentChanges` and offers prepareRename whatever the
    # client declared (seen with Neovim's and eglot's capabilities): a client of the shared
    # pyright gets the same as from pyright alone.
    edits_follow_client_caps = False
    prepare_rename_follows_client_caps = False
    # pyright sends an auto-import item's labelDetails whatever the client declared (1.1.414,
    # seen with a client without labelDetailsSupport).
    folds_label_details = False
    # pyright filters definition and declaration by whether the client declared declaration.
    split_methods = pyright_definitions.METHODS
    # In pull mode pyright still publishes an empty set for a document when it is closed.
    clears_closed_documents_for_pull_clients = True
    # pyright analyses every workspace file from disk whether or not it is open.
    opening_saved_files_changes_answers = False
    # pyright answers pulls in any mode, analysing the document then and there; pushing, it
    # analyses only 250 ms after the last request or change of any client, so a busy client
    # would hold back what a pull client sees if the daemon answered it from pushes.
    answers_pulls_while_pushing = True

    # onInitialized fetches the settings and loads the configuration again, logging it.
    reloads_on_initialized = True
    # pyright's workspace comes from workspaceFolders, else rootPath; it ignores rootUri (a client
    # naming only that gets its '<default>' workspace, which resolves no project import).
    root_fields = ("workspaceFolders", "rootPath")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._analysing: set[Any] = set()
        # The workspace folders pyright has yet to enumerate: the root (None) from its start, then
        # each folder added (URI). It logs the end of each enumeration but not whose it was (a new
        # folder's can end before the root's), so each such line settles the oldest entry: what
        # counts is how many are due. A folder removed first is dropped by name.
        self._undiscovered: list[str | None] = [None]
        # What symbols_by_text depends on, from the current process's log (pyright_symbols.py).
        self._symbol_keys = PyrightSymbolKeys()
        # Configuration files already logged as unreadable, with their mtime and size (source_files).
        self._unreadable_said: set[tuple[str, int, int]] = set()

    def command(self, root: Path, daemon_pid: int) -> list[str]:
        """The node process the PyPI `pyright-langserver` would start, else the configured one (pyright_launch.py)."""
        argv = super().command(root, daemon_pid)
        direct = pyright_launch.node_argv(argv[0], argv[1:], self.environment())
        return argv if direct is None else direct

    def language(self, locale: object) -> str | None:
        """pyright writes one language per process, from `locale` or its environment (pyright_locale.py)."""
        return pyright_locale.language(locale, self.environment())

    def configuration(self, items: list[dict[str, Any]]) -> list[Any]:
        """Answer every section; pyright treats null as "use defaults" only for some."""
        answers = super().configuration(items)
        # pyright reads `python.analysis` as an object; null there makes it log
        # errors on every pull, so an unconfigured section is an empty table.
        return [
            {} if ans is None and item.get("section") in ("python", "python.analysis", "pyright") else ans
            for ans, item in zip(answers, items, strict=True)
        ]

    def pull_diagnostics_registration(
        self, client_caps: dict[str, Any], client_options: dict[str, Any]
    ) -> dict[str, Any] | None:
        """pyright serves pull diagnostics, through a dynamic registration, to a client that can take one.

        Its rule: `textDocument.diagnostic.dynamicRegistration` declared and the
        client's initializationOptions do not say `disablePullDiagnostics`.
        """
        if declared(client_caps, "textDocument.diagnostic.dynamicRegistration") is not True:
            return None
        if client_options.get("disablePullDiagnostics") is True:
            return None
        if self._section("python.analysis.diagnosticMode") == "workspace":
            # pyright alone would register workspace pulls too, answered as analysis goes on; the
            # daemon does not hold workspace pulls open, so such a client is pushed every file's
            # diagnostics instead (VS Code takes pushes as well), and misses none.
            return None
        return {
            "interFileDependencies": True,
            "workspaceDiagnostics": False,
            "documentSelector": None,
            "identifier": "Pyright",
        }

    def diagnostics_for_client(
        self, uri: str, diagnostics: list[Any], client_caps: dict[str, Any]
    ) -> list[tuple[Any, Any]] | None:
        """Without the unused, unreachable or deprecated hints whose tag the client did not declare.

        pyright alone drops them for such a client (adapters/pyright/pyright_tags.py); a set
        without such a hint goes to it untouched.
        """
        return pyright_tags.without_undeclared(diagnostics, pyright_tags.undeclared_tags(client_caps))

    def words_diagnostics_for(self, client_caps: dict[str, Any]) -> bool:
        """A client that did not list both of pyright's tags may be told fewer hints."""
        return bool(pyright_tags.undeclared_tags(client_caps))

    def signature_help_for_client(self, result: bytes, client_caps: dict[str, Any]) -> bytes | None:
        """Parameter labels as text, and the active signature's parameter, for a client that declared neither form."""
        return pyright_signatures.for_client(result, client_caps)

    def completion_for_client(self, result: bytes, client_caps: dict[str, Any]) -> bytes | None:
        """Documentation in plaintext for a client that lists no markdown (pyright_completion_docs.py)."""
        return pyright_completion_docs.for_client(result, client_caps)

    def asked_as(self, method: str, client_caps: dict[str, Any]) -> tuple[str, ...] | None:
        """Both declaration and definition for a client without `textDocument.declaration` (pyright_definitions.py)."""
        return pyright_definitions.ASKED if pyright_definitions.asks_both(method, client_caps) else None

    def merged(self, method: str, results: list[Any]) -> Any:
        """pyright's unfiltered list from its declaration (stubs) and definition (sources) answers."""
        stubs, sources = results
        return pyright_definitions.unfiltered(stubs, sources)

    def plaintext_hover(self, markdown: str) -> str | None:
        """pyright's plaintext hover: its parts without fences, the docstring read back (pyright_hover.py)."""
        return pyright_hover.plaintext_hover(markdown)

    def bind_file_request(self, path: Path) -> tuple[str, dict[str, Any]] | None:
        """documentSymbol of one Python file: pyright parses and binds it for that, and keeps both.

        pyright 1.1.414's document-symbol provider calls `program.getParseResults`, which is
        `getBoundSourceFileInfo` (tokenize, parse, bind), on a file nobody opened (its Trace log
        shows `parsing:` and `binding:` for it), and keeps them: with pyright alone on tornado, the
        novel `utf8` references bound no file after it. It has no foldingRange nor semanticTokens
        handler. On tornado the files a shared editor had not reached cost 5 ms of wall time each
        in the median, 31 at most (auth.py).
        """
        if path.suffix not in (".py", ".pyi"):
            return None
        return "textDocument/documentSymbol", {"textDocument": {"uri": path.as_uri()}}

    def source_files(self, root: Path) -> list[Path]:
        """The files pyright enumerates under `root`: its include, exclude and default excludes (pyright_sources.py)."""
        analysis = self._section("python.analysis")
        return pyright_sources.source_files(root, analysis if isinstance(analysis, dict) else {}, self._unreadable)

    def _unreadable(self, path: Path, why: str) -> None:
        """Said once per file and content: the walk lists files again after every folder added and restart."""
        try:
            st = path.stat()
            stamp: tuple[str, int, int] = (str(path), st.st_mtime_ns, st.st_size)
        except OSError:
            stamp = (str(path), 0, 0)
        if stamp in self._unreadable_said:
            return
        self._unreadable_said.add(stamp)
        log.warning("pyright configuration %s %s; pyright reads nothing from it, nor does the bind walk", path, why)

    def indexing(self) -> bool:
        """True while pyright reports workspace analysis progress."""
        return bool(self._analysing)

    def warm(self) -> bool | None:
        """True once pyright has enumerated the source files of the root and of every folder added."""
        if not self._undiscovered:
            return True
        level = self._section("python.analysis.logLevel")
        return None if isinstance(level, str) and level.lower() in _QUIET_LOG_LEVELS else False

    def reset(self) -> None:
        """A new pyright process knows nothing yet."""
        self._analysing.clear()
        self._undiscovered = [None]
        self._symbol_keys.reset()

    def folders_changed(self, added: list[str], removed: list[str]) -> None:
        """Each added folder is a service of its own, enumerated once its settings are read; a removed one never is."""
        self._undiscovered = [*(f for f in self._undiscovered if f not in removed), *added]

    def observe_progress(self, token: Any, value: dict[str, Any]) -> None:
        """Track analysis progress (an untitled begin), not the per-request "Finding references" kind."""
        kind = value.get("kind")
        if kind == "begin" and not value.get("title"):
            self._analysing.add(token)
        elif kind == "end":
            self._analysing.discard(token)

    def personal_greeting(self, method: str, params: bytes, root: Path, workspace: dict[str, Any]) -> bytes | None:
        """pyright names its service instance after the client's workspace folder ("" for a rootPath alone)."""
        if method != "window/logMessage":
            return None
        value = _decoded(params)
        if not isinstance(value, dict) or value.get("message") != _service_line(root.name or str(root)):
            return None
        name = _workspace_name(workspace, root)
        if name is None or name == (root.name or str(root)):
            return None
        return msgspec.json.encode({**value, "message": _service_line(name)})

    def restatement_key(self, method: str, params: bytes) -> bytes:
        """pyright's enumeration result, in whichever words ("No source files found", "Found 1 source file")."""
        if method == "window/logMessage":
            message = _log_message(params)
            if message is not None and _ENUMERATED.match(message):
                return b"pyright: source files found"
        return super().restatement_key(method, params)

    def background_progress(self, token: Any, begin: dict[str, Any]) -> bool | None:
        """Analysis is untitled; a request's work has a title ("Finding references", "Executing command")."""
        return not begin.get("title")

    def progress_request_method(self, begin: dict[str, Any]) -> str | None:
        """The method of a titled progress pyright creates ("Finding references": a references request's)."""
        title = begin.get("title")
        return _REQUEST_PROGRESS.get(title) if isinstance(title, str) else None

    def progress_notifications(self, token: Any, value: dict[str, Any]) -> list[tuple[str, Any]]:
        """pyright reports its analysis to a client without window progress as `pyright/*Progress`.

        Its progress reporter begins `$/progress` untitled for a client that declared
        `window.workDoneProgress`, else sends `pyright/beginProgress`, `pyright/reportProgress`
        with the message and `pyright/endProgress`, their params as vscode-jsonrpc puts them
        (`[null]`, `["3 files to analyze"]`: seen on the wire). Progress a request created
        ("Finding references") such a client never gets.
        """
        kind = value.get("kind")
        if kind == "begin":
            return [("pyright/beginProgress", [None])] if not value.get("title") else []
        if token not in self._analysing:
            return []
        if kind == "report":
            return [("pyright/reportProgress", [value.get("message", "")])]
        if kind == "end":
            return [("pyright/endProgress", [None])]
        return []

    def observe_notification(self, method: str, params: Any) -> None:
        """See the log lines that end the enumeration of one workspace folder, and say what pyright runs with."""
        if method != "window/logMessage":
            return
        message = _log_message(params)
        if message is None:
            return
        enumerated = _ENUMERATED.match(message) is not None
        self._symbol_keys.observe(message, enumerated=enumerated)
        if self._undiscovered and enumerated:
            self._undiscovered.pop(0)

    def symbols_by_text(self, path: Path, text: str) -> str | None:
        """pyright's symbols of a `.py` file are its parse and binding alone, given the environment.

        Why, and what that environment is read from: adapters/pyright/pyright_symbols.py.
        """
        return self._symbol_keys.key(path, text, self.config.fingerprint(), self.config.settings)


def _service_line(name: str) -> str:
    return f'Starting service instance "{name}"'


def _workspace_name(workspace: dict[str, Any], root: Path) -> str | None:
    """The name pyright gives the root's workspace from a client's initialize: its folder's, else "" for rootPath."""
    folders = workspace.get("workspaceFolders")
    if isinstance(folders, list):
        for folder in folders:
            if isinstance(folder, dict) and folder.get("uri") == root.as_uri() and isinstance(folder.get("name"), str):
                return str(folder["name"])
        return None
    if isinstance(workspace.get("rootPath"), str):
        return ""
    return None


def _decoded(params: Any) -> Any:
    try:
        return msgspec.json.decode(bytes(params))
    except (TypeError, msgspec.DecodeError):
        return None


def _log_message(params: Any) -> str | None:
    """The text of a window/logMessage, whether params arrive raw or decoded."""
    if isinstance(params, dict):
        text = params.get("message")
        return text if isinstance(text, str) else None
    try:
        value = msgspec.json.decode(bytes(params))
    except (TypeError, msgspec.DecodeError):
        return None
    text = value.get("message") if isinstance(value, dict) else None
    return text if isinstance(text, str) else None
