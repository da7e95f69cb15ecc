"""What pyright's documentSymbol answer depends on beside the text: the key of the symbol cache (issue 23)."""

from __future__ import annotations

from pathlib import Path

from lensmux.adapters.clangd.clangd import ClangdAdapter
from lensmux.adapters.pyright.pyright import PyrightAdapter
from lensmux.adapters.spec import ServerConfig

TEXT = "def f() -> int:\n    return 1\n"


def _log(adapter: PyrightAdapter, *lines: str) -> None:
    for line in lines:
        adapter.observe_notification("window/logMessage", {"type": 3, "message": line})


def _started(root: Path, *config_lines: str, version: str = "1.1.414") -> PyrightAdapter:
    adapter = PyrightAdapter(ServerConfig(name="pyright", command="pyright-langserver"))
    _log(adapter, f"Pyright language server {version} starting", f'Starting service instance "{root.name}"')
    _log(adapter, *config_lines, "Found 3 source files")
    return adapter


def test_the_key_is_known_once_pyright_said_its_version_and_configuration(tmp_path: Path) -> None:
    adapter = PyrightAdapter(ServerConfig(name="pyright", command="pyright-langserver"))
    assert adapter.symbols_by_text(tmp_path / "a.py", TEXT) is None
    _log(adapter, "Pyright language server 1.1.414 starting", "Assuming Python version 3.11.7.final.0")
    assert adapter.symbols_by_text(tmp_path / "a.py", TEXT) is None, "not before the configuration is complete"
    _log(adapter, "Found 3 source files")
    assert adapter.symbols_by_text(tmp_path / "a.py", TEXT) is not None
    adapter.reset()
    assert adapter.symbols_by_text(tmp_path / "a.py", TEXT) is None, "a new process says it again"


def test_roots_with_the_same_environment_share_a_key_and_others_do_not(tmp_path: Path) -> None:
    one, two, other = (tmp_path / n for n in ("one", "two", "other"))
    for root in (one, two, other):
        root.mkdir()
    # pyproject.toml: only [tool.pyright] counts, not a project's version.
    (one / "pyproject.toml").write_text('[project]\nversion = "6.4.2"\n[tool.pyright]\npythonVersion = "3.11"\n')
    (two / "pyproject.toml").write_text('[project]\nversion = "6.5.1"\n[tool.pyright]\npythonVersion = "3.11"\n')
    (other / "pyproject.toml").write_text('[tool.pyright]\npythonVersion = "3.8"\n')
    keys = [
        _started(root, f"Loading pyproject.toml file at {root / 'pyproject.toml'}").symbols_by_text(root / "m.py", TEXT)
        for root in (one, two, other)
    ]
    assert keys[0] is not None and keys[0] == keys[1] != keys[2]
    assumed = [
        _started(tmp_path, f"Assuming Python version {v}").symbols_by_text(tmp_path / "m.py", TEXT)
        for v in ("3.11.7", "3.8.18")
    ]
    assert assumed[0] != assumed[1]
    newer = _started(one, f"Loading pyproject.toml file at {one / 'pyproject.toml'}", version="1.1.415")
    assert newer.symbols_by_text(one / "m.py", TEXT) != keys[0]


def test_files_whose_symbols_depend_on_more_than_their_text_have_no_key(tmp_path: Path) -> None:
    adapter = _started(tmp_path, "Assuming Python version 3.11.7")
    assert adapter.symbols_by_text(tmp_path / "m.py", "from .util import *\n" + TEXT) is None
    assert adapter.symbols_by_text(tmp_path / "m.pyi", TEXT) is None
    (tmp_path / "pyrightconfig.json").write_text('{"executionEnvironments": [{"root": "src"}]}')
    per_file = _started(tmp_path, f"Loading configuration file at {tmp_path / 'pyrightconfig.json'}")
    assert per_file.symbols_by_text(tmp_path / "m.py", TEXT) is None
    clangd = ClangdAdapter(ServerConfig(name="clangd", command="clangd"))
    assert clangd.symbols_by_text(tmp_path / "m.c", "int f(void) { return 1; }\n") is None


def test_a_configuration_loaded_again_replaces_the_first(tmp_path: Path) -> None:
    (tmp_path / "pyrightconfig.json").write_text('{"pythonVersion": "3.11"}')
    adapter = _started(tmp_path, f"Loading configuration file at {tmp_path / 'pyrightconfig.json'}")
    before = adapter.symbols_by_text(tmp_path / "m.py", TEXT)
    (tmp_path / "pyrightconfig.json").write_text('{"pythonVersion": "3.8"} ')
    _log(adapter, f"Loading configuration file at {tmp_path / 'pyrightconfig.json'}")
    assert adapter.symbols_by_text(tmp_path / "m.py", TEXT) is None, "until pyright has found its files again"
    _log(adapter, "Found 3 source files")
    after = adapter.symbols_by_text(tmp_path / "m.py", TEXT)
    assert before is not None and after is not None and before != after
