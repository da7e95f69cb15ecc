"""Nested project layouts for `bench.mux.root_policy`: a repository with a sub-project a client asks for.

Every layout is a repository `repo/` holding a sub-project (`sub/`, or `mid/sub/`) and code
outside it: a module the sub-project imports from the repository's top, a consumer of the
sub-project's function, a second definition of a name the sub-project also defines, and a bulk
of other modules (what a server started on the repository also counts, parses and indexes).
Layouts differ only in the markers and configuration files around the sub-project, so whatever
differs between a server started on the sub-project and one started on the mapped root comes
from the root alone.

Files are given relative to the layout's directory; `@REPO@` stands for the absolute path of
`repo/` (compile databases and `.clangd` need absolute paths); a key ending in `/` is a directory.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Probe:
    """A position in a file of the layout: `offset` characters into the first `needle`."""

    label: str
    file: str
    needle: str
    offset: int = 0

    def position(self, base: Path) -> dict[str, int]:
        """The LSP position (UTF-16 = characters here: the layouts are ASCII)."""
        text = (base / self.file).read_text()
        index = text.index(self.needle) + self.offset
        line = text.count("\n", 0, index)
        return {"line": line, "character": index - (text.rfind("\n", 0, index) + 1)}


@dataclass(frozen=True)
class Layout:
    """One nested layout for one server, and where a session on it looks."""

    name: str
    server: str
    language: str
    description: str
    files: dict[str, str]
    asked: str  # the directory the client asks for, relative to the layout's directory
    document: str  # the file the session opens, inside `asked`
    lookups: tuple[Probe, ...]  # hover and definition at each (import resolution)
    references: Probe  # references to a function the sub-project defines
    symbol: str  # a workspace/symbol query for a name defined inside and outside the sub-project

    def write(self, base: Path) -> None:
        """Create the layout's files under `base`."""
        repo = str((base / "repo").resolve())
        for relative, text in self.files.items():
            path = base / relative
            if relative.endswith("/"):
                path.mkdir(parents=True, exist_ok=True)
                continue
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text.replace("@REPO@", repo))


# -- Python (pyright) ---------------------------------------------------------------------

PY_MAIN = (
    "import common\n"
    "import libmod\n"
    "import vendored\n"
    "from core import sub_function\n"
    "from localpkg import local_thing\n"
    "\n"
    "\n"
    "def run(flag):\n"
    "    total = common.common_helper() + libmod.lib_helper() + vendored.vendored_value() + local_thing()\n"
    "    return sub_function(total) + flag\n"
)


def _py_bulk(count: int) -> dict[str, str]:
    module = (
        "class Record{n}:\n    def __init__(self, value: int) -> None:\n        self.value = value\n\n"
        "    def doubled(self) -> int:\n        return self.value * 2\n\n\n"
        "def make{n}(value: int) -> Record{n}:\n    return Record{n}(value)\n\n\n"
        "def total{n}(values: list[int]) -> int:\n    return sum(make{n}(v).doubled() for v in values)\n"
    )
    return {f"repo/other/bulk/mod{n:03d}.py": module.format(n=n) for n in range(count)}


def _py_tree(sub: str, bulk: int) -> dict[str, str]:
    """The Python content every layout shares, with the sub-project at `repo/<sub>`."""
    dotted = sub.replace("/", ".")
    return {
        "repo/common.py": "def common_helper() -> int:\n    return 1\n",
        "repo/lib/libmod.py": "def lib_helper() -> int:\n    return 3\n",
        "repo/vendor/vendored.py": "def vendored_value() -> int:\n    return 5\n",
        "repo/other/__init__.py": "",
        "repo/other/consumer.py": (
            f"from {dotted}.core import sub_function\n\n\ndef consume() -> int:\n    return sub_function(2)\n"
        ),
        "repo/other/names.py": "def twin_name() -> str:\n    return 'other'\n",
        f"repo/{sub}/core.py": (
            "def sub_function(x: int) -> int:\n    return x * 2\n\n\ndef twin_name() -> str:\n    return 'sub'\n"
        ),
        f"repo/{sub}/src/localpkg/__init__.py": "def local_thing() -> int:\n    return 4\n",
        f"repo/{sub}/main.py": PY_MAIN,
        **_py_bulk(bulk),
    }


def _py_layout(name: str, description: str, sub: str, markers: dict[str, str], bulk: int) -> Layout:
    main = f"repo/{sub}/main.py"
    return Layout(
        name=name,
        server="pyright",
        language="python",
        description=description,
        files={**_py_tree(sub, bulk), **markers},
        asked=f"repo/{sub}",
        document=main,
        lookups=(
            Probe("repo-top module", main, "common_helper()"),
            Probe("extraPaths module", main, "lib_helper()"),
            Probe("execution-environment path", main, "vendored_value()"),
            Probe("src/ of the sub-project", main, "local_thing()"),
        ),
        references=Probe("sub_function", f"repo/{sub}/core.py", "sub_function", 0),
        symbol="twin_name",
    )


STRICT_TOOL_PYRIGHT = '[tool.pyright]\nextraPaths = ["lib"]\ntypeCheckingMode = "strict"\n'
PYRIGHTCONFIG = json.dumps(
    {
        "include": ["sub", "other", "common.py"],
        "exclude": ["other/bulk/mod1*"],
        "extraPaths": ["lib"],
        "typeCheckingMode": "strict",
        "executionEnvironments": [{"root": "sub", "extraPaths": ["lib", "vendor"]}],
    },
    indent=1,
)


def python_layouts(bulk: int) -> list[Layout]:
    """The pyright layouts: no marker in the sub-project, configuration at or above it, and a control."""
    return [
        _py_layout("py-git", "`.git` at repo/; sub/ has no marker", "sub", {"repo/.git/": ""}, bulk),
        _py_layout(
            "py-pyproject",
            "repo/pyproject.toml with `[tool.pyright]` (extraPaths, strict); sub/ has no marker",
            "sub",
            {"repo/.git/": "", "repo/pyproject.toml": '[project]\nname = "repo"\n\n' + STRICT_TOOL_PYRIGHT},
            bulk,
        ),
        _py_layout(
            "py-pyrightconfig",
            "repo/pyrightconfig.json (include, exclude, extraPaths, executionEnvironments, strict)",
            "sub",
            {"repo/.git/": "", "repo/pyrightconfig.json": PYRIGHTCONFIG},
            bulk,
        ),
        _py_layout(
            "py-config-between",
            "`.git` at repo/, pyrightconfig.json (extraPaths ../lib, strict) in repo/mid/, asked repo/mid/sub/",
            "mid/sub",
            {
                "repo/.git/": "",
                "repo/mid/__init__.py": "",
                "repo/mid/pyrightconfig.json": json.dumps({"extraPaths": ["../lib"], "typeCheckingMode": "strict"}),
            },
            bulk,
        ),
        _py_layout(
            "py-own-marker",
            "control: sub/ has its own pyproject.toml (the mapped root is the asked one)",
            "sub",
            {
                "repo/.git/": "",
                "repo/pyproject.toml": '[project]\nname = "repo"\n\n' + STRICT_TOOL_PYRIGHT,
                "repo/sub/pyproject.toml": '[project]\nname = "sub"\n',
            },
            bulk,
        ),
    ]


# -- C (clangd) ---------------------------------------------------------------------------

C_MAIN = (
    '#include "shared.h"\n'
    '#include "local.h"\n'
    "\n"
    "#ifndef FROM_CONFIG\n"
    '#warning "built without the project\'s flags"\n'
    "#endif\n"
    "\n"
    "int sub_function(int v) { return shared_helper(v) * 2; }\n"
    "int twin_name(void) { return 1; }\n"
    "int use(void) { return sub_function(3) + twin_name(); }\n"
)
C_FLAGS = ["-Iinclude", "-Isub", "-DFROM_CONFIG"]


def _c_bulk(count: int) -> dict[str, str]:
    unit = (
        "struct record{n} {{ int value; }};\n\n"
        "static int doubled{n}(struct record{n} r) {{ return r.value * 2; }}\n\n"
        "int total{n}(const int *values, int n) {{\n"
        "    int sum = 0;\n"
        "    for (int i = 0; i < n; i++) {{ struct record{n} r = {{values[i]}}; sum += doubled{n}(r); }}\n"
        "    return sum;\n"
        "}}\n"
    )
    return {f"repo/other/bulk/unit{n:03d}.c": unit.format(n=n) for n in range(count)}


def _c_tree(bulk: int) -> dict[str, str]:
    return {
        "repo/include/shared.h": "#pragma once\nint shared_helper(int v);\n",
        "repo/sub/local.h": "#pragma once\nint sub_function(int v);\nint twin_name(void);\n",
        "repo/sub/main.c": C_MAIN,
        "repo/other/shared.c": '#include "shared.h"\nint shared_helper(int v) { return v + 1; }\n',
        "repo/other/consumer.c": '#include "local.h"\nint consume(void) { return sub_function(2); }\n',
        "repo/other/names.c": (
            "static int twin_name(void) { return 2; }\nint other_twin(void) { return twin_name(); }\n"
        ),
        **_c_bulk(bulk),
    }


def _compile_commands(files: dict[str, str], under: str) -> str:
    """A compile database at repo/ for every .c file under repo/<under>."""
    prefix = "repo/" + under
    entries = [
        {
            "directory": "@REPO@",
            "file": "@REPO@/" + path.removeprefix("repo/"),
            "arguments": ["cc", "-c", *C_FLAGS, path.removeprefix("repo/")],
        }
        for path in sorted(files)
        if path.endswith(".c") and path.startswith(prefix)
    ]
    return json.dumps(entries, indent=1)


def _c_layout(name: str, description: str, markers: dict[str, str], bulk: int) -> Layout:
    main = "repo/sub/main.c"
    return Layout(
        name=name,
        server="clangd",
        language="c",
        description=description,
        files={**_c_tree(bulk), **markers},
        asked="repo/sub",
        document=main,
        lookups=(Probe("header in include/", main, "shared_helper(v)"),),
        references=Probe("sub_function", main, "sub_function(int v)"),
        symbol="twin_name",
    )


def c_layouts(bulk: int) -> list[Layout]:
    """The clangd layouts: a compile database, flags or `.clangd` at the repository, and a control."""
    tree = _c_tree(bulk)
    return [
        _c_layout(
            "c-cdb-repo",
            "repo/compile_commands.json (every file); sub/ has no marker",
            {"repo/.git/": "", "repo/compile_commands.json": _compile_commands(tree, "")},
            bulk,
        ),
        _c_layout(
            "c-flags-repo",
            "repo/compile_flags.txt; sub/ has no marker",
            {"repo/.git/": "", "repo/compile_flags.txt": "\n".join(C_FLAGS) + "\n"},
            bulk,
        ),
        _c_layout(
            "c-dotclangd",
            "`.git` and a `.clangd` (CompileFlags) at repo/, a `.clangd` in sub/; no compile database",
            {
                "repo/.git/": "",
                "repo/.clangd": "CompileFlags:\n  Add: [-I@REPO@/include, -I@REPO@/sub]\n",
                "repo/sub/.clangd": "CompileFlags:\n  Add: [-DFROM_CONFIG]\n",
            },
            bulk,
        ),
        _c_layout("c-git", "`.git` at repo/ only: fallback flags", {"repo/.git/": ""}, bulk),
        _c_layout(
            "c-own-marker",
            "control: repo/compile_commands.json and sub/compile_flags.txt (the mapped root is the asked one)",
            {
                "repo/.git/": "",
                "repo/compile_commands.json": _compile_commands(tree, ""),
                "repo/sub/compile_flags.txt": "\n".join(["-I../include", "-DFROM_CONFIG"]) + "\n",
            },
            bulk,
        ),
    ]


def all_layouts(py_bulk: int, c_bulk: int) -> list[Layout]:
    """Every layout, pyright's first."""
    return [*python_layouts(py_bulk), *c_layouts(c_bulk)]
