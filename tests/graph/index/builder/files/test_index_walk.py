"""Which files get indexed: .gitignore rules, junk directories, size cap, binaries, languages."""

from __future__ import annotations

from pathlib import Path

from support.projects import write_files

from lensmux.graph.index.builder.files.languages import language_for
from lensmux.graph.index.builder.files.walk import IgnoreRules, read_source, walk_files


def test_nested_gitignore_with_negation_and_default_skips(tmp_path: Path) -> None:
    write_files(
        tmp_path,
        {
            ".gitignore": "*.log\nbuild/\n/secret.py\n",
            "app/.gitignore": "generated_*.py\n!generated_keep.py\n",
            "app/main.py": "x = 1\n",
            "app/generated_api.py": "x = 1\n",
            "app/generated_keep.py": "x = 1\n",
            "app/secret.py": "x = 1\n",  # /secret.py only matches at the root
            "secret.py": "x = 1\n",
            "debug.log": "noise\n",
            "build/out.py": "x = 1\n",
            "node_modules/lib/index.js": "x\n",
            ".venv/lib/site.py": "x = 1\n",
            "env/pyvenv.cfg": "home = /usr\n",
            "env/lib/thing.py": "x = 1\n",
            ".git/config.py": "x = 1\n",
            "pkg/__pycache__/m.py": "x = 1\n",
            "image.png": "not really\n",
            "Makefile": "all:\n",
        },
    )
    rules = IgnoreRules(tmp_path)
    found = {f.rel: f.language for f in walk_files(rules)}
    assert found == {
        "app/main.py": "python",
        "app/generated_keep.py": "python",
        "app/secret.py": "python",
        "Makefile": "makefile",
    }
    assert rules.is_ignored("app/generated_api.py")
    assert not rules.is_ignored("app/generated_keep.py")
    assert rules.is_ignored("build/new.py"), "a file under an ignored directory is ignored"
    assert rules.is_ignored("env/lib/new.py"), "a virtualenv under any name is skipped"
    assert rules.is_ignored(".git/HEAD")
    assert not rules.is_ignored("src/new.py")


def test_size_cap_and_binary_and_non_utf8_files_are_skipped(tmp_path: Path) -> None:
    (tmp_path / "big.py").write_text("x = 1\n" * 1000)
    (tmp_path / "blob.c").write_bytes(b"int x;\0\1\2binary")
    (tmp_path / "latin.py").write_bytes("s = 'caf\xe9'\n".encode("latin-1"))
    (tmp_path / "ok.py").write_text("s = 'café'\n", encoding="utf-8")
    walked = {f.rel for f in walk_files(IgnoreRules(tmp_path), max_file_bytes=1000)}
    assert walked == {"blob.c", "latin.py", "ok.py"}, "the size cap applies while walking"
    assert read_source(tmp_path / "blob.c") is None
    assert read_source(tmp_path / "latin.py") is None
    source = read_source(tmp_path / "ok.py")
    assert source is not None and source.text == "s = 'café'\n"
    assert read_source(tmp_path / "big.py", max_file_bytes=1000) is None


def test_language_detection() -> None:
    assert language_for("a/b.py") == "python"
    assert language_for("x.pyi") == "python"
    assert language_for("x.h") == "c"
    assert language_for("x.hpp") == "cpp"
    assert language_for("x.CC") == "cpp"
    assert language_for("Program.cs") == "csharp"
    assert language_for("main.go") == "go"
    assert language_for("CMakeLists.txt") == "cmake"
    assert language_for("photo.jpeg") is None
