"""Unit rendering, systemd-analyze verification and install/uninstall without a user manager."""

from __future__ import annotations

import os
import re
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from lensmux.daemon.service.errors import UnitRenderError
from lensmux.daemon.service.units import (
    DEFAULT_SERVERS,
    EXECUTABLE_PLACEHOLDER,
    SERVICE_UNIT,
    SOCKET_UNIT,
    install_service,
    render_service_unit,
    render_socket_unit,
    render_units,
    resolve_executable,
    uninstall_service,
    user_unit_dir,
)

REPO = Path(__file__).resolve().parents[2]
ANALYZE = shutil.which("systemd-analyze")
needs_analyze = pytest.mark.skipif(ANALYZE is None, reason="systemd-analyze is not installed")


def _real_executable() -> Path:
    beside = Path(sys.executable).parent / "lensmux"
    return beside if beside.exists() else Path("/bin/true")


def _verify(unit_dir: Path, runtime_dir: Path) -> list[str]:
    """Run `systemd-analyze --user verify`; return the diagnostics about our files."""
    assert ANALYZE is not None
    runtime_dir.mkdir(mode=0o700, exist_ok=True)
    env = {**os.environ, "XDG_RUNTIME_DIR": str(runtime_dir)}
    done = subprocess.run(
        [
            ANALYZE,
            "--user",
            "verify",
            "--man=no",
            "--generators=no",
            str(unit_dir / SOCKET_UNIT),
            str(unit_dir / SERVICE_UNIT),
        ],
        capture_output=True,
        text=True,
        env=env,
        check=False,
        timeout=60,
    )
    # verify only warns (exit 0) about many mistakes, so its output counts too.
    lines = [line for line in done.stderr.splitlines() if str(unit_dir) in line]
    if done.returncode != 0:
        lines.append(f"exit {done.returncode}: {done.stderr.strip()}")
    return lines


def _write(unit_dir: Path, units: dict[str, str]) -> None:
    unit_dir.mkdir(parents=True, exist_ok=True)
    for name, text in units.items():
        (unit_dir / name).write_text(text)


def test_socket_unit_listens_on_each_configured_server_and_the_control_socket() -> None:
    text = render_socket_unit(["clangd", "gopls"])
    listens = re.findall(r"^ListenStream=(.*)$", text, re.M)
    assert listens == [
        "%t/lensmux/clangd.sock",
        "%t/lensmux/gopls.sock",
        "%t/lensmux/lensmux.sock",
    ]
    assert "SocketMode=0600" in text
    assert "DirectoryMode=0700" in text
    assert "WantedBy=sockets.target" in text


@needs_analyze
def test_rendered_units_pass_systemd_analyze_verify(tmp_path: Path) -> None:
    units = render_units(DEFAULT_SERVERS, _real_executable())
    _write(tmp_path / "units", units)
    assert _verify(tmp_path / "units", tmp_path / "run") == []


@needs_analyze
def test_verify_check_reports_a_broken_unit(tmp_path: Path) -> None:
    units = render_units(DEFAULT_SERVERS, _real_executable())
    units[SERVICE_UNIT] = units[SERVICE_UNIT].replace("Type=notify", "Type=notfy")
    _write(tmp_path / "units", units)
    assert _verify(tmp_path / "units", tmp_path / "run") != []


@needs_analyze
def test_executable_path_with_space_and_percent_is_escaped(tmp_path: Path) -> None:
    bin_dir = tmp_path / "my bin 100%t"
    bin_dir.mkdir()
    exe = bin_dir / "lensmux"
    exe.write_text("#!/bin/sh\nexit 0\n")
    exe.chmod(0o755)
    units = render_units(["clangd"], exe)
    _write(tmp_path / "units", units)
    assert _verify(tmp_path / "units", tmp_path / "run") == []
    line = next(ln for ln in units[SERVICE_UNIT].splitlines() if ln.startswith("ExecStart="))
    assert '"' in line
    assert "100%%t" in line


def test_repository_templates_match_the_renderer() -> None:
    assert (REPO / "systemd" / SOCKET_UNIT).read_text() == render_socket_unit(DEFAULT_SERVERS), (
        "systemd/lensmux.socket is stale: rewrite it from render_socket_unit(DEFAULT_SERVERS)"
    )
    assert (REPO / "systemd" / SERVICE_UNIT).read_text() == render_service_unit(EXECUTABLE_PLACEHOLDER), (
        "systemd/lensmux.service is stale: rewrite it from render_service_unit('@LENSMUX@')"
    )


@needs_analyze
def test_repository_templates_verify_once_the_placeholder_is_substituted(tmp_path: Path) -> None:
    exe = str(_real_executable())
    units = {
        name: (REPO / "systemd" / name).read_text().replace(EXECUTABLE_PLACEHOLDER, exe)
        for name in (SOCKET_UNIT, SERVICE_UNIT)
    }
    _write(tmp_path / "units", units)
    assert _verify(tmp_path / "units", tmp_path / "run") == []


def test_service_unit_keeps_to_options_a_user_manager_can_enforce() -> None:
    text = render_service_unit("/usr/bin/lensmux")
    settings = dict(line.split("=", 1) for line in text.splitlines() if "=" in line and line[0] != "#")
    assert settings["Type"] == "notify"
    assert settings["ExecStart"] == "/usr/bin/lensmux serve --foreground"
    assert settings["KillMode"] == "control-group"
    assert settings["NoNewPrivileges"] == "yes"
    needs_namespaces = {
        "PrivateTmp",
        "ProtectSystem",
        "ProtectHome",
        "PrivateDevices",
        "ProtectKernelTunables",
        "ProtectControlGroups",
        "PrivateUsers",
    }
    assert needs_namespaces.isdisjoint(settings)
    # onnxruntime and node need W+X memory.
    assert "MemoryDenyWriteExecute" not in settings


@pytest.mark.parametrize("names", [["lensmux"], ["a/b"], [""], ["x y"], ["c%t"], ["go", "go"]])
def test_unusable_server_names_are_refused(names: list[str]) -> None:
    with pytest.raises(UnitRenderError):
        render_socket_unit(names)


@pytest.mark.parametrize("path", ["bin/lensmux", "/home/$USER/lensmux", "/a\nb"])
def test_unusable_executable_paths_are_refused(path: str) -> None:
    with pytest.raises(UnitRenderError):
        render_service_unit(path)


def test_resolve_executable_prefers_the_entry_point_beside_this_interpreter() -> None:
    beside = Path(sys.executable).parent / "lensmux"
    if not beside.exists():
        pytest.skip("lensmux is not installed beside this interpreter")
    assert resolve_executable() == Path(os.path.abspath(beside))


def test_user_unit_dir_honours_absolute_xdg_config_home(tmp_path: Path) -> None:
    assert user_unit_dir({"XDG_CONFIG_HOME": str(tmp_path)}) == tmp_path / "systemd/user"
    relative = user_unit_dir({"XDG_CONFIG_HOME": "relative/dir"})
    assert relative == Path.home() / ".config/systemd/user"


@pytest.fixture
def no_user_manager(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A config home of our own, and no way for systemctl --user to reach any manager."""
    runtime = tmp_path / "runtime"
    runtime.mkdir(mode=0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    monkeypatch.delenv("DBUS_SESSION_BUS_ADDRESS", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    return tmp_path / "config" / "systemd" / "user"


def test_install_without_user_manager_writes_units_and_says_what_to_run(
    no_user_manager: Path,
) -> None:
    report = install_service(["clangd", "pyright"], now=True)

    assert report.unit_dir == no_user_manager
    assert not report.user_manager_running
    assert report.commands_run == ()
    assert set(report.files_written) == {
        no_user_manager / SOCKET_UNIT,
        no_user_manager / SERVICE_UNIT,
    }
    socket_text = (no_user_manager / SOCKET_UNIT).read_text()
    assert socket_text == render_socket_unit(["clangd", "pyright"])
    assert f"ExecStart={resolve_executable()} serve" in (no_user_manager / SERVICE_UNIT).read_text()
    mode = stat.S_IMODE((no_user_manager / SOCKET_UNIT).stat().st_mode)
    assert mode == 0o644
    assert sorted(p.name for p in no_user_manager.iterdir()) == [SERVICE_UNIT, SOCKET_UNIT]
    assert report.commands_to_run == (
        "systemctl --user daemon-reload",
        "systemctl --user enable --now lensmux.socket",
    )
    assert "not running" in report.message
    for command in report.commands_to_run:
        assert command in report.message


def test_reinstall_replaces_the_socket_list(no_user_manager: Path) -> None:
    install_service(["clangd", "pyright", "omnisharp"], now=False)
    install_service(["clangd"], now=False)
    text = (no_user_manager / SOCKET_UNIT).read_text()
    assert "pyright" not in text
    assert "omnisharp" not in text


def test_uninstall_without_user_manager_removes_units_and_enablement_link(
    no_user_manager: Path,
) -> None:
    install_service(["clangd"], now=True)
    wants = no_user_manager / "sockets.target.wants"
    wants.mkdir()
    (wants / SOCKET_UNIT).symlink_to(no_user_manager / SOCKET_UNIT)

    report = uninstall_service()

    assert set(report.files_removed) == {
        no_user_manager / SOCKET_UNIT,
        no_user_manager / SERVICE_UNIT,
        wants / SOCKET_UNIT,
    }
    assert list(no_user_manager.rglob("*lensmux*")) == []
    assert report.commands_to_run == (
        "systemctl --user stop lensmux.socket lensmux.service",
        "systemctl --user daemon-reload",
    )


def test_uninstall_of_nothing_removes_nothing(no_user_manager: Path) -> None:
    report = uninstall_service()
    assert report.files_removed == ()
