"""What the agent session asks each server, on which files of which project.

An agent asks about files on disk that no editor changes (the editors next to it hold
demo/intl.py, src/intl.c with their disk text and edit only the busy file), so an editor's
unsaved text, which is shared on purpose, never shows in its answers. Positions are text needles.

clangd knows a file's cross-file references only from its index, which holds the files open at
that clangd; so its burst asks only what a file's own AST answers (its symbols, hover, static
functions), and the one cross-file question (references of add) is asked alone, where this
agent's open files are known.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from support.projects import C_FILES, PY_FILES

from conformance.servers import C_BUSY, C_INTL, CLANGD, PY_BUSY, PY_INTL, PYRIGHT, ServerCase

SYMBOLS = "textDocument/documentSymbol"
HOVER = "textDocument/hover"
DEFINITION = "textDocument/definition"
REFERENCES = "textDocument/references"
# The aspect each kind of answer is compared under.
ASPECT = {SYMBOLS: "symbols", HOVER: "hover", DEFINITION: "definition", REFERENCES: "references"}


@dataclass(frozen=True)
class Ask:
    """One request about a file on disk, at the start of `needle` (none for documentSymbol)."""

    label: str
    method: str
    rel: str
    needle: str = ""
    # references: asked again (up to 30 s) until this file is among the answers, as the editor
    # session does; only the answer once the server has found the workspace is deterministic.
    complete_with: str = ""


@dataclass(frozen=True)
class AgentPlan:
    """The project an agent works on and what it asks: one after another, then all at once."""

    case: ServerCase  # the project, and where the editors next to the agents work
    steps: tuple[Ask, ...]
    burst: tuple[Ask, ...]
    # The log line with which the server says it has started (found its workspace), if it says so.
    started: str | None = None


# A few callers of add: cross-file references that stay small with ten clients asking.
PY_FEW_CALLERS = {
    f"demo/callers/mod{n:02d}.py": "from demo.util import add\n\n\n"
    + "".join(f"def f{i}() -> int:\n    return add({i}, {n})\n\n\n" for i in range(5))
    for n in range(4)
}

PYRIGHT_PLAN = AgentPlan(
    case=replace(PYRIGHT, files={**PY_FILES, "demo/intl.py": PY_INTL, "demo/busy.py": PY_BUSY, **PY_FEW_CALLERS}),
    steps=(
        Ask("symbols of main.py", SYMBOLS, "demo/main.py"),
        Ask("hover on scale in main.py", HOVER, "demo/main.py", "scale(add(1, 2)"),
        Ask("definition of add from main.py", DEFINITION, "demo/main.py", "add(1, 2)"),
        Ask("references of add", REFERENCES, "demo/util.py", "add(a: int", complete_with="demo/main.py"),
        Ask("hover on twice in intl.py", HOVER, "demo/intl.py", "twice(3)"),
    ),
    burst=(
        Ask("references of scale", REFERENCES, "demo/util.py", "scale(value"),
        Ask("references of twice", REFERENCES, "demo/intl.py", "twice(v: int"),
        Ask("definition of add from a caller", DEFINITION, "demo/callers/mod00.py", "add(0, 0)"),
        Ask("symbols of util.py", SYMBOLS, "demo/util.py"),
        Ask("symbols of intl.py", SYMBOLS, "demo/intl.py"),
        Ask("definition of Calculator", DEFINITION, "demo/main.py", "Calculator()"),
        Ask("hover on add in util.py", HOVER, "demo/util.py", "add(total"),
    ),
    started=r"Found \d+ source files?|No source files found",
)

CLANGD_PLAN = AgentPlan(
    case=replace(CLANGD, files={**C_FILES, "src/intl.c": C_INTL, "src/busy.c": C_BUSY}),
    steps=(
        Ask("symbols of main.c", SYMBOLS, "src/main.c"),
        Ask("hover on scale in main.c", HOVER, "src/main.c", "scale(add(1, 2)"),
        Ask("definition of compute", DEFINITION, "src/main.c", "compute() =="),
        Ask("references of add", REFERENCES, "src/main.c", "add(1, 2)"),
        Ask("hover on twice in intl.c", HOVER, "src/intl.c", "twice(3)"),
    ),
    burst=(
        Ask("symbols of util.c", SYMBOLS, "src/util.c"),
        Ask("symbols of intl.c", SYMBOLS, "src/intl.c"),
        Ask("hover on add in util.c", HOVER, "src/util.c", "add(total"),
        Ask("definition of twice", DEFINITION, "src/intl.c", "twice(3)"),
        Ask("references of twice", REFERENCES, "src/intl.c", "twice(int v"),
        Ask("hover on compute", HOVER, "src/main.c", "compute() =="),
    ),
)

PLANS = {plan.case.name: plan for plan in (CLANGD_PLAN, PYRIGHT_PLAN)}
