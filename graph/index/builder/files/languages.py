"""Which files the index reads, and as what language (LSP languageId)."""

from __future__ import annotations

from pathlib import PurePath

LANGUAGE_BY_EXTENSION: dict[str, str] = {
    # Languages lensmux has servers for: these get symbol chunks.
    ".py": "python",
    ".pyi": "python",
    ".c": "c",
    ".h": "c",
    ".cc": "cpp",
    ".cpp": "cpp",
    ".cxx": "cpp",
    ".c++": "cpp",
    ".hpp": "cpp",
    ".hh": "cpp",
    ".hxx": "cpp",
    ".ipp": "cpp",
    ".inl": "cpp",
    ".cs": "csharp",
    # Everything below is indexed as line windows unless a server shows up for it.
    ".js": "javascript",
    ".mjs": "javascript",
    ".cjs": "javascript",
    ".jsx": "javascriptreact",
    ".ts": "typescript",
    ".mts": "typescript",
    ".tsx": "typescriptreact",
    ".go": "go",
    ".rs": "rust",
    ".java": "java",
    ".kt": "kotlin",
    ".kts": "kotlin",
    ".scala": "scala",
    ".swift": "swift",
    ".m": "objective-c",
    ".mm": "objective-cpp",
    ".rb": "ruby",
    ".php": "php",
    ".lua": "lua",
    ".pl": "perl",
    ".r": "r",
    ".jl": "julia",
    ".zig": "zig",
    ".dart": "dart",
    ".ex": "elixir",
    ".exs": "elixir",
    ".erl": "erlang",
    ".hs": "haskell",
    ".ml": "ocaml",
    ".fs": "fsharp",
    ".vb": "vb",
    ".sql": "sql",
    ".sh": "shellscript",
    ".bash": "shellscript",
    ".zsh": "shellscript",
    ".fish": "fish",
    ".ps1": "powershell",
    ".md": "markdown",
    ".rst": "restructuredtext",
    ".txt": "plaintext",
    ".toml": "toml",
    ".json": "json",
    ".jsonc": "jsonc",
    ".yaml": "yaml",
    ".yml": "yaml",
    ".ini": "ini",
    ".cfg": "ini",
    ".xml": "xml",
    ".html": "html",
    ".htm": "html",
    ".css": "css",
    ".scss": "scss",
    ".proto": "proto",
    ".cmake": "cmake",
    ".mk": "makefile",
    ".csproj": "xml",
    ".sln": "plaintext",
}

LANGUAGE_BY_FILENAME: dict[str, str] = {
    "Makefile": "makefile",
    "GNUmakefile": "makefile",
    "makefile": "makefile",
    "CMakeLists.txt": "cmake",
    "Dockerfile": "dockerfile",
    "meson.build": "meson",
    "BUILD": "starlark",
    "BUILD.bazel": "starlark",
    "WORKSPACE": "starlark",
}


def language_for(path: PurePath | str) -> str | None:
    """The LSP languageId for a file, or None when the index does not read it."""
    p = PurePath(path)
    by_name = LANGUAGE_BY_FILENAME.get(p.name)
    if by_name is not None:
        return by_name
    return LANGUAGE_BY_EXTENSION.get(p.suffix.lower())
