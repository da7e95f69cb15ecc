"""pyright's workspace sources as pyright 1.1.414 enumerates them (adapters/pyright/pyright_sources.py).

Each rule is pyright's own (service.ts, sourceEnumerator.ts, uriUtils.ts); the integration tests
(tests/integration/test_bind_walk_scope.py) compare the count with pyright's "Found N source files".
"""

from __future__ import annotations

from pathlib import Path

from lensmux.adapters.pyright.pyright_sources import file_spec, source_files


def _tree(root: Path, *rels: str, config: str | None = None) -> Path:
    """`rels` as small modules, and `config` as the root's pyrightconfig.json."""
    for rel in rels:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text("x = 1\n")
    if config is not None:
        (root / "pyrightconfig.json").write_text(config)
    return root


def _sources(root: Path, settings: dict[str, object] | None = None) -> tuple[list[str], list[str]]:
    said: list[str] = []
    found = source_files(root, settings or {}, lambda path, why: said.append(f"{path.name} {why}"))
    return [p.relative_to(root).as_posix() for p in found], said


FILES = ("main.py", "pkg/a.py", "pkg/b.pyi", "pkg/c.txt", "build/gen.py", "tests/fixtures/f.py", "tests/t.py")


def test_no_configuration_is_the_root_without_the_default_excludes(tmp_path: Path) -> None:
    root = _tree(tmp_path, *FILES, ".hidden/h.py", "pkg/.h.py", "node_modules/n.py", "x/__pycache__/p.py")
    _tree(root, "__editable__.pkg-1/e.py", "venv/v.py", "venv/pyvenv.cfg", "conda/c.py", "conda/conda-meta/x")
    found, said = _sources(root)
    assert found == ["build/gen.py", "main.py", "pkg/a.py", "pkg/b.pyi", "tests/fixtures/f.py", "tests/t.py"]
    assert said == []


def test_exclude_adds_to_the_default_excludes_and_reaches_below(tmp_path: Path) -> None:
    root = _tree(tmp_path, *FILES, ".hidden/h.py", config='{"exclude": ["build", "tests/fixtures"]}')
    assert _sources(root)[0] == ["main.py", "pkg/a.py", "pkg/b.pyi", "tests/t.py"]


def test_include_narrows_and_a_file_may_be_included_alone(tmp_path: Path) -> None:
    root = _tree(tmp_path, *FILES, config='{"include": ["pkg", "main.py", "/abs", "missing"]}')
    assert _sources(root)[0] == ["main.py", "pkg/a.py", "pkg/b.pyi"]


def test_an_empty_include_is_the_root(tmp_path: Path) -> None:
    root = _tree(tmp_path, *FILES, config='{"include": [], "exclude": ["tests", "build"]}')
    assert _sources(root)[0] == ["main.py", "pkg/a.py", "pkg/b.pyi"]


def test_globs_as_pyright_compiles_them(tmp_path: Path) -> None:
    root = _tree(tmp_path, "a/gen_x.py", "a/b/gen_y.py", "a/keep.py", "a/old_v1.py", "a/b/c/d.py", "z.py")
    (root / "pyrightconfig.json").write_text('{"exclude": ["**/gen_*", "a/old_v?.py", "a/*/c"]}')
    assert _sources(root)[0] == ["a/keep.py", "z.py"]
    assert file_spec(Path("/r"), "**/.*").regex.pattern == r"^(/r(/[^/][^/]*)*?/\.[^/]*)($|/)"
    # A name matches itself and everything below it, not a longer name.
    spec = file_spec(Path("/r"), "build")
    assert spec.matches(Path("/r/build")) and spec.matches(Path("/r/build/x.py"))
    assert not spec.matches(Path("/r/builder/x.py"))


def test_a_wildcard_include_explores_only_what_its_pattern_reaches(tmp_path: Path) -> None:
    """`src/*.py` is explored from `src` only; `src/**/*.py` to any depth (hasDirectoryWildcard)."""
    root = _tree(tmp_path, "src/a.py", "src/deep/b.py", "other/c.py")
    (root / "pyrightconfig.json").write_text('{"include": ["src/*.py"]}')
    assert _sources(root)[0] == ["src/a.py"]
    (root / "pyrightconfig.json").write_text('{"include": ["src/**/*.py"]}')
    assert _sources(root)[0] == ["src/a.py", "src/deep/b.py"]


def test_jsonc_comments_and_trailing_commas_are_read(tmp_path: Path) -> None:
    text = '{\n  // generated\n  "exclude": ["build", /* old */ "tests",],\n}\n'
    root = _tree(tmp_path, *FILES, config=text)
    assert _sources(root) == (["main.py", "pkg/a.py", "pkg/b.pyi"], [])


def test_pyrightconfig_json_is_read_before_pyproject_toml(tmp_path: Path) -> None:
    root = _tree(tmp_path, *FILES, config='{"include": ["pkg"]}')
    (root / "pyproject.toml").write_text('[tool.pyright]\ninclude = ["tests"]\n')
    assert _sources(root)[0] == ["pkg/a.py", "pkg/b.pyi"]


def test_pyproject_tool_pyright_and_a_pyproject_without_it(tmp_path: Path) -> None:
    root = _tree(tmp_path / "repo" / "proj", *FILES)
    (root / "pyproject.toml").write_text('[tool.pyright]\ninclude = ["tests"]\nexclude = ["**/fixtures"]\n')
    assert _sources(root)[0] == ["tests/t.py"]
    # Without [tool.pyright], pyright takes the nearest configuration above, its paths from there.
    (root / "pyproject.toml").write_text('[project]\nname = "p"\n')
    (tmp_path / "repo" / "pyrightconfig.json").write_text('{"exclude": ["proj/build", "proj/tests"]}')
    assert _sources(root)[0] == ["main.py", "pkg/a.py", "pkg/b.pyi"]


def test_no_root_pyproject_means_no_search_above(tmp_path: Path) -> None:
    root = _tree(tmp_path / "repo" / "proj", *FILES)
    (tmp_path / "repo" / "pyrightconfig.json").write_text('{"include": ["proj/pkg"]}')
    assert len(_sources(root)[0]) == 6


def test_extends_applies_the_base_first_each_relative_to_its_folder(tmp_path: Path) -> None:
    root = _tree(tmp_path / "proj", *FILES)
    (tmp_path / "base.json").write_text('{"include": ["proj/pkg", "proj/tests"], "exclude": ["proj/tests"]}')
    (root / "pyrightconfig.json").write_text('{"extends": "../base.json", "exclude": ["tests/fixtures"]}')
    assert _sources(root)[0] == ["pkg/a.py", "pkg/b.pyi", "tests/t.py"]


def test_settings_apply_only_without_a_configuration_file(tmp_path: Path) -> None:
    root = _tree(tmp_path, *FILES)
    settings: dict[str, object] = {"include": ["pkg"], "exclude": ["**/*.pyi"]}
    assert _sources(root, settings)[0] == ["pkg/a.py"]
    (root / "pyrightconfig.json").write_text('{"include": ["tests"]}')
    assert _sources(root, settings)[0] == ["tests/fixtures/f.py", "tests/t.py"]


def test_a_malformed_configuration_is_no_configuration_and_is_said(tmp_path: Path) -> None:
    root = _tree(tmp_path, *FILES, config='{"exclude": ["build"')
    found, said = _sources(root)
    assert len(found) == 6 and len(said) == 1 and said[0].startswith("pyrightconfig.json is not valid JSON")
    (root / "pyrightconfig.json").unlink()
    (root / "pyproject.toml").write_text("[tool.pyright\n")
    found, said = _sources(root)
    assert len(found) == 6 and len(said) == 1 and said[0].startswith("pyproject.toml is not valid TOML")


def test_a_symlinked_folder_is_followed_once_first_name_first_and_not_out_of_the_root(tmp_path: Path) -> None:
    root = _tree(tmp_path / "proj", "pkg/a.py")
    _tree(tmp_path, "outside/o.py")
    (root / "link").symlink_to(root / "pkg")
    (root / "out").symlink_to(tmp_path / "outside")
    (root / "loop").symlink_to(root)
    # pyright walks `link` before `pkg` and skips the folder it has seen by its real path.
    assert _sources(root)[0] == ["link/a.py"]
