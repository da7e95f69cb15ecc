"""Server configs and adapter quirks: roots, launch commands, configuration answers."""

from __future__ import annotations

from pathlib import Path

import pytest

from lensmux.adapters.base import ServerNotInstalled
from lensmux.adapters.clangd.clangd import BACKGROUND_INDEX_TOKEN
from lensmux.adapters.registry import adapter_for
from lensmux.daemon.config import ConfigInvalid, load_config


def test_embedded_configs_define_the_three_servers() -> None:
    config = load_config(Path("/nonexistent/config.toml"))
    assert {"clangd", "pyright", "omnisharp"} <= set(config.servers)
    assert config.servers["pyright"].language_of("x/y.py") == "python"
    assert config.servers["clangd"].timeouts.for_method("textDocument/references") == 60.0


def test_user_file_overrides_and_adds_servers(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text(
        "[daemon]\nidle_timeout = 12\n"
        '[servers.clangd]\nargs = ["--log=verbose"]\n'
        '[servers.clangd.timeouts]\n"textDocument/hover" = 3\n'
        '[servers.mine]\ncommand = "my-ls"\nroot_markers = ["x.txt"]\n'
    )
    config = load_config(path, explicit=True)
    assert config.daemon.idle_timeout == 12
    assert config.servers["clangd"].args == ["--log=verbose"]
    assert config.servers["clangd"].root_markers[0] == "compile_commands.json"
    assert config.servers["clangd"].timeouts.for_method("textDocument/hover") == 3
    assert config.servers["mine"].command == "my-ls"


def test_invalid_config_names_file_and_key_path(tmp_path: Path) -> None:
    path = tmp_path / "bad.toml"
    path.write_text('[daemon]\nidle_timeout = "soon"\n')
    with pytest.raises(ConfigInvalid) as err:
        load_config(path, explicit=True)
    assert str(path) in str(err.value) and "$.daemon.idle_timeout" in str(err.value)


def test_index_store_table_takes_a_dsn_without_a_password(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LENSMUX_INDEX_DSN", raising=False)
    path = tmp_path / "config.toml"
    assert load_config(path).index.team_dsn() is None, "the embedded store is the default"
    path.write_text('[index]\nstore = "postgres"\ndsn = "service=team"\n')
    assert load_config(path).index.team_dsn() == "service=team"
    monkeypatch.setenv("LENSMUX_INDEX_DSN", "host=db.internal dbname=lensmux")
    assert load_config(path).index.team_dsn() == "host=db.internal dbname=lensmux"
    for secret in ("host=db password=hunter2", "postgresql://ci:hunter2@db/lensmux"):
        path.write_text(f'[index]\nstore = "postgres"\ndsn = "{secret}"\n')
        with pytest.raises(ConfigInvalid, match="password"):
            load_config(path)


def test_root_is_nearest_ancestor_with_a_marker_or_the_asked_one(tmp_path: Path) -> None:
    config = load_config(tmp_path / "none.toml")
    (tmp_path / "repo/.git").mkdir(parents=True)
    (tmp_path / "repo/sub/deep").mkdir(parents=True)
    (tmp_path / "repo/sub/compile_commands.json").write_text("[]")
    (tmp_path / "repo/pyproject.toml").write_text("")
    clangd = adapter_for(config.servers["clangd"])
    assert clangd.find_root(tmp_path / "repo/sub/deep") == tmp_path / "repo/sub"
    # pyright has no markers: its answers depend on its root, so it runs on the one asked for.
    pyright = adapter_for(config.servers["pyright"])
    assert pyright.find_root(tmp_path / "repo/sub/deep") == tmp_path / "repo/sub/deep"
    # No marker anywhere: the editor's own root stands.
    (tmp_path / "loose").mkdir()
    assert pyright.find_root(tmp_path / "loose") == tmp_path / "loose"


def test_omnisharp_launch_and_solution_discovery(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = load_config(tmp_path / "none.toml")
    (tmp_path / "app/src").mkdir(parents=True)
    (tmp_path / "app/App.sln").write_text("")
    (tmp_path / "app/src/App.csproj").write_text("")
    fake_bin = tmp_path / "bin"
    fake_bin.mkdir()
    exe = fake_bin / "OmniSharp"
    exe.write_text("#!/bin/sh\n")
    exe.chmod(0o755)
    monkeypatch.setenv("PATH", str(fake_bin))
    adapter = adapter_for(config.servers["omnisharp"])
    root = adapter.find_root(tmp_path / "app/src")
    assert root == tmp_path / "app/src"  # the nearest *.csproj
    assert adapter.find_root(tmp_path / "app") == tmp_path / "app"
    argv = adapter.command(tmp_path / "app", 4242)
    assert argv[0] == str(exe)
    assert "-lsp" in argv and argv[argv.index("--hostPID") + 1] == "4242"
    assert argv[argv.index("-s") + 1] == str(tmp_path / "app/App.sln")


def test_missing_executable_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    config = load_config(tmp_path / "none.toml")
    with pytest.raises(ServerNotInstalled, match="OmniSharp"):
        adapter_for(config.servers["omnisharp"]).command(tmp_path, 1)


def test_initialize_params_pin_daemon_pid_root_and_utf16(tmp_path: Path) -> None:
    config = load_config(tmp_path / "none.toml")
    adapter = adapter_for(config.servers["clangd"])
    params = adapter.initialize_params(
        {"processId": 1, "rootUri": "file:///elsewhere", "capabilities": {"general": {"positionEncodings": ["utf-8"]}}},
        tmp_path,
        777,
    )
    assert params["processId"] == 777
    assert params["rootUri"] == tmp_path.as_uri()
    assert params["capabilities"]["general"]["positionEncodings"] == ["utf-16"]
    assert params["capabilities"]["workspace"]["configuration"] is True


def test_configuration_answers_one_item_per_section(tmp_path: Path) -> None:
    config = load_config(tmp_path / "none.toml")
    pyright = adapter_for(config.servers["pyright"])
    answers = pyright.configuration([{"section": "python.analysis"}, {"section": "python"}, {"section": "nope.x"}])
    assert len(answers) == 3
    assert answers[0]["diagnosticMode"] == "openFilesOnly"
    assert "analysis" in answers[1]
    assert answers[2] is None


def test_clangd_is_indexing_between_background_progress_begin_and_end(tmp_path: Path) -> None:
    clangd = adapter_for(load_config(tmp_path / "none.toml").servers["clangd"])
    assert not clangd.indexing()
    clangd.observe_progress(BACKGROUND_INDEX_TOKEN, {"kind": "begin", "title": "indexing"})
    assert clangd.indexing()
    clangd.observe_progress("other", {"kind": "end"})
    assert clangd.indexing()
    clangd.observe_progress(BACKGROUND_INDEX_TOKEN, {"kind": "end"})
    assert not clangd.indexing()


def test_servers_are_told_the_daemons_capabilities_whoever_started_them(tmp_path: Path) -> None:
    config = load_config(tmp_path / "none.toml")
    indexer = {"processId": 1, "rootUri": tmp_path.as_uri(), "capabilities": {"window": {"workDoneProgress": True}}}
    editor = {
        "processId": 2,
        "rootUri": tmp_path.as_uri(),
        "capabilities": {"textDocument": {"diagnostic": {"dynamicRegistration": True}}},
    }
    for server in ("clangd", "pyright", "omnisharp"):
        adapter = adapter_for(config.servers[server])
        a = adapter.initialize_params(indexer, tmp_path, 9)
        b = adapter.initialize_params(editor, tmp_path, 9)
        assert a == b
        caps = a["capabilities"]
        # Push-only: pull clients are served by the daemon from what is pushed.
        assert "diagnostic" not in caps["textDocument"]
        assert caps["textDocument"]["publishDiagnostics"]["versionSupport"] is True
        assert caps["textDocument"]["completion"]["completionItem"]["snippetSupport"] is True
        assert caps["workspace"]["didChangeWatchedFiles"]["dynamicRegistration"] is True
        assert caps["general"]["positionEncodings"] == ["utf-16"]
    clangd = adapter_for(config.servers["clangd"]).initialize_params(editor, tmp_path, 9)
    assert clangd["capabilities"]["offsetEncoding"] == ["utf-16"]


def test_clangd_file_status_goes_only_to_clients_that_enabled_it() -> None:
    config = load_config(None)
    clangd = adapter_for(config.servers["clangd"])
    status = "textDocument/clangd.fileStatus"
    assert clangd.extension_notification(status)
    assert clangd.notification_wanted(status, {"clangdFileStatus": True})
    assert not clangd.notification_wanted(status, {})
    assert not adapter_for(config.servers["pyright"]).extension_notification(status)
