"""Small real projects for integration tests, C (clangd) and Python (pyright), and the writer of any tree."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

C_FILES = {
    "compile_flags.txt": "-std=c11\n-Iinclude\n",
    "include/util.h": (
        "#ifndef UTIL_H\n#define UTIL_H\nint add(int a, int b);\nint scale(int value, int factor);\n#endif\n"
    ),
    "src/util.c": (
        '#include "util.h"\n'
        "\n"
        "int add(int a, int b) {\n"
        "    return a + b;\n"
        "}\n"
        "\n"
        "int scale(int value, int factor) {\n"
        "    int total = 0;\n"
        "    for (int i = 0; i < factor; i++) {\n"
        "        total = add(total, value);\n"
        "    }\n"
        "    return total;\n"
        "}\n"
    ),
    "src/main.c": (
        '#include "util.h"\n'
        "\n"
        "static int compute(void) {\n"
        "    return scale(add(1, 2), 3);\n"
        "}\n"
        "\n"
        "int main(void) {\n"
        "    return compute() == 9 ? 0 : 1;\n"
        "}\n"
    ),
}

PY_FILES = {
    "pyproject.toml": '[project]\nname = "demo"\nversion = "0.1"\n',
    "demo/__init__.py": "",
    "demo/util.py": (
        "def add(a: int, b: int) -> int:\n"
        "    return a + b\n"
        "\n"
        "\n"
        "def scale(value: int, factor: int) -> int:\n"
        "    total = 0\n"
        "    for _ in range(factor):\n"
        "        total = add(total, value)\n"
        "    return total\n"
    ),
    "demo/main.py": (
        "from demo.util import add, scale\n"
        "\n"
        "\n"
        "class Calculator:\n"
        "    def compute(self) -> int:\n"
        "        return scale(add(1, 2), 3)\n"
        "\n"
        "\n"
        "def main() -> int:\n"
        "    return Calculator().compute()\n"
    ),
}


def write_files(root: Path, files: dict[str, str]) -> Path:
    """Create the files (and their directories) under `root`; returns `root`."""
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


def write_c_project(root: Path) -> Path:
    """Write the C project under `root`."""
    return write_files(root, C_FILES)


def write_py_project(root: Path) -> Path:
    """Write the Python project under `root`."""
    return write_files(root, PY_FILES)


# Where `shared` is named in pkg/core.py of the fan-out project.
FANOUT_SHARED_DEF = (0, 4)
FANOUT_CALLS_PER_MODULE = 20


def write_py_fanout_project(root: Path, modules: int) -> Path:
    """A Python package where `pkg.core.shared` is imported and called from `modules` modules."""
    files = {
        "pyproject.toml": '[project]\nname = "pkg"\nversion = "0.1"\n',
        "pkg/__init__.py": "",
        "pkg/core.py": (
            "def shared(x: int) -> int:\n    return x + 1\n\n\ndef other(x: int) -> int:\n    return shared(x) * 2\n"
        ),
    }
    for i in range(modules):
        body = "from pkg.core import other, shared\n"
        for j in range(FANOUT_CALLS_PER_MODULE):
            body += f"\n\ndef f{i}_{j}(v: int) -> int:\n    w = other(v) + {j}\n    return shared(w)\n"
        files[f"pkg/mod{i}.py"] = body
    return write_files(root, files)


def fanout_references(uri: str, position: tuple[int, int] = FANOUT_SHARED_DEF) -> dict[str, Any]:
    """`textDocument/references` params at `position` of `uri` (by default `shared` in pkg/core.py), no declaration."""
    line, character = position
    return {
        "textDocument": {"uri": uri},
        "position": {"line": line, "character": character},
        "context": {"includeDeclaration": False},
    }


def fanout_reference_count(modules: int) -> int:
    """References to `shared` outside its declaration: one import and the calls per module, one in core."""
    return modules * (1 + FANOUT_CALLS_PER_MODULE) + 1


def add_session_calls(root: Path, modules: int, calls: int) -> None:
    """Add `pkg.session.Session.request` to a fan-out project, called `calls` times from each module."""
    (root / "pkg/session.py").write_text(
        "class Session:\n    def request(self, url: str) -> str:\n        return url\n"
    )
    for i in range(modules):
        with open(root / f"pkg/mod{i}.py", "a") as f:
            f.write("\n\nfrom pkg.session import Session\n\n\n")
            f.write("".join(f"def g{i}_{j}() -> str:\n    return Session().request('{j}')\n\n\n" for j in range(calls)))


def git(root: Path, *args: str) -> str:
    """Run git in root as a throwaway committer; its stdout, stripped (CalledProcessError if it fails)."""
    done = subprocess.run(
        ["git", "-C", str(root), "-c", "user.name=t", "-c", "user.email=t@example.invalid", *args],
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip()
