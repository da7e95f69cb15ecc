"""Comparisons lensmux still fails, each with what the first client sees and why.

Key: (server, profile, aspect) as in test_conformance.py. Remove an entry when its fix lands: the
xfail is strict, so a comparison that starts to pass fails the run until its entry is removed.
TIMING lists the entries whose outcome depends on a race between the two clients (seen passing
and failing on the same code); those are not strict.
AGENT_XFAILS and AGENT_TIMING are the same for test_agents.py, keyed by (server, agent profile,
aspect): they hold for every agent of that profile in the crowd.
"""

from __future__ import annotations

import pytest

XFAILS: dict[tuple[str, str, str], str] = {}

TIMING: frozenset[tuple[str, str, str]] = frozenset()

# -- agents among many clients (test_agents.py): (server, agent profile, aspect) -> reason ---------

FOLDER_NAME = (
    "mcp-language-server names its workspace folder by its full path: pyright alone logs 'Starting service "
    "instance \"$BASE/proj\"', through lensmux the agent is told the daemon's name for that folder ('proj')"
)
MCP_LS_LOG = (
    FOLDER_NAME + "; and alone, its two `initialized` notifications make pyright load its configuration twice, "
    "and the agent is told both rounds"
)
ROOT_ONLY_URI = (
    "lsp-mcp-server sends rootUri alone (no rootPath, no workspaceFolders): pyright alone then starts a "
    "'<default>' workspace ('No include entries specified; assuming /<default workspace root>', 'No source files "
    "found'), resolves no import of demo.util (reportMissingImports errors, definition null, hover 'scale: Unknown', "
    "references only within the asked file); the shared pyright runs on the root the daemon mapped that rootUri "
    "to and answers across the project (the root policy of docs/sharing.md)"
)
HOVER_PLAINTEXT = (
    "declared no textDocument.hover.contentFormat: the server alone answers hover in plaintext; through lensmux "
    "the agent gets the markdown the daemon's capabilities asked for (hover results are not shaped per client)"
)
CODE_ACTION_KINDS = (
    "declared no textDocument.codeAction.codeActionLiteralSupport: clangd alone announces codeActionProvider: true; "
    "through lensmux the InitializeResult says {codeActionKinds: [quickfix, refactor, info]} (client_view.py does "
    "not shape codeActionProvider)"
)
CLOSE_VERSION = (
    "the empty diagnostics after this agent's didClose: alone, the server publishes them without a version; "
    "through lensmux they carry 'version': 0 (cleared by the daemon because another client still holds the file, "
    "src/intl.c or demo/intl.py always: the editors hold it)"
)
PYRIGHT_CLOSE = (
    CLOSE_VERSION + "; and where this agent was the file's last holder (demo/util.py, demo/main.py, "
    "demo/callers/mod00.py), pyright's own clearing publish reaches no client (daemon log: 'pushed to 0 clients'), "
    "so the agent is told nothing where alone it is told the empty set"
)
AGENT_XFAILS: dict[tuple[str, str, str], str] = {
    ("pyright", "serena", "diagnostics"): PYRIGHT_CLOSE,
    ("pyright", "mcp-language-server", "startup"): FOLDER_NAME,
    ("pyright", "mcp-language-server", "log_messages"): MCP_LS_LOG,
    ("pyright", "mcp-language-server", "hover"): HOVER_PLAINTEXT,
    **{
        ("pyright", "lsp-mcp-server", aspect): ROOT_ONLY_URI
        for aspect in ("startup", "hover", "definition", "references", "diagnostics", "log_messages")
    },
    **{("clangd", profile, "hover"): HOVER_PLAINTEXT for profile in ("mcp-language-server", "multilspy", "serena")},
    **{("clangd", profile, "initialize"): CODE_ACTION_KINDS for profile in ("lsp-mcp-server", "multilspy", "serena")},
    **{("clangd", profile, "diagnostics"): CLOSE_VERSION for profile in ("multilspy", "serena")},
}
AGENT_TIMING: frozenset[tuple[str, str, str]] = frozenset()


def xfail_marks(
    key: tuple[str, str, str], reasons: dict[tuple[str, str, str], str], timing: frozenset[tuple[str, str, str]]
) -> list[pytest.MarkDecorator]:
    """The xfail mark of one comparison, if it is a known failure.

    Strict: a fix makes the comparison pass, and the entry must then go. Only where today's
    failure depends on timing (`timing`) is a pass tolerated.
    """
    reason = reasons.get(key)
    return [pytest.mark.xfail(strict=key not in timing, reason=reason)] if reason else []
