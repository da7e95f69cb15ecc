"""Which files the bind walk asks a shared pyright about, and how many (issue 21, bind_walk.py, pyright_sources.py).

The walk asks only the files pyright itself enumerates as the workspace's sources: its own
`include` and `exclude` (pyrightconfig.json, else `[tool.pyright]` in pyproject.toml), its
default excludes, and at most `prebind_max_files` of them. Whether pyright bound a file is read
from its Trace log (`binding:` lines); how many files pyright enumerated, from its own
"Found N source files", which the walk's count must equal; what the walk asked, from the
daemon's debug log. pyright 1.1.414 answers documentSymbol of a file it does not track with []
and parses nothing for it, so a file outside its include or exclude is never bound either way:
what the scope saves is the requests.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import pytest
from support.daemon_proc import DaemonProc, running_daemon, wait_until
from support.lspclient import LspClient

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

TRACE = '\n[servers.pyright.settings.python.analysis]\nlogLevel = "Trace"\n'
Session = tuple[DaemonProc, LspClient]
# After the walk is done: long enough for a stray request's binding line to arrive.
SETTLE_S = 1.0


def _write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def _messages(client: LspClient) -> list[str]:
    return [p.get("message", "") for p in client.notifications_of("window/logMessage") if isinstance(p, dict)]


def _bound(client: LspClient, rel: str) -> bool:
    """pyright's Trace line for binding a file: `[FG] binding: file:///.../rel (3ms)`."""
    return any("binding: " in m and m.rstrip().split(" (")[0].endswith("/" + rel) for m in _messages(client))


def _found(client: LspClient) -> int:
    for m in _messages(client):
        if (found := re.match(r"Found (\d+) source files?", m)) is not None:
            return int(found.group(1))
    return 0


def _walk_state(daemon: DaemonProc) -> str | None:
    instances = daemon.instances("pyright")
    return instances[0].get("prebind") if instances else None


def _listed(daemon: DaemonProc) -> int:
    """How many files the walk listed (its log line)."""
    found = re.findall(r"binding (\d+) workspace files ahead", daemon.log_text())
    return int(found[-1]) if found else -1


@asynccontextmanager
async def _walked(base: Path, root: Path, config: str = TRACE, state: str = "done") -> AsyncIterator[Session]:
    """A daemon and an editor on `root` (main.py open), once `lensmux status` shows the walk in `state`."""
    with running_daemon(base, config) as daemon:
        async with LspClient.over_process(daemon.client_argv("pyright"), name="editor") as editor:
            await editor.initialize(root)
            await editor.open(root / "main.py", "python")
            with anyio.fail_after(60):
                while not any(m.startswith(("Found ", "No source files")) for m in _messages(editor)):
                    await anyio.sleep(0.05)
            wait_until(lambda: _walk_state(daemon) == state, timeout=60, what=f"bind walk {state} in status")
            # A wait, not a measurement: any binding line the walk caused has arrived by then.
            await anyio.sleep(SETTLE_S)
            yield daemon, editor


MAIN = {"main.py": "def main() -> int:\n    return 1\n"}


async def test_an_excluded_folders_file_is_never_asked(tmp_path: Path) -> None:
    root = _write(
        tmp_path / "proj",
        MAIN
        | {
            "pyrightconfig.json": '{\n  // generated code\n  "exclude": ["build", "tests/fixtures"],\n}\n',
            "lib.py": "class Lib:\n    pass\n",
            "build/gen.py": "class Gen:\n    pass\n",
            "tests/test_lib.py": "def test() -> None:\n    pass\n",
            "tests/fixtures/case.py": "class Case:\n    pass\n",
        },
    )
    async with _walked(tmp_path / "d", root) as (daemon, editor):
        assert _bound(editor, "lib.py") and _bound(editor, "tests/test_lib.py")
        assert not _bound(editor, "build/gen.py") and not _bound(editor, "tests/fixtures/case.py")
        assert _listed(daemon) == _found(editor) == 3
    # pyright alone answers [] for a file it does not track, without parsing it: asking one would
    # cost a request in a quiet moment for nothing (seen on main: 5 asks here).
    assert daemon.log_text().count("bind walk: asking") == 3


async def test_an_include_narrower_than_the_root_is_followed(tmp_path: Path) -> None:
    root = _write(
        tmp_path / "proj",
        MAIN
        | {
            "pyproject.toml": '[project]\nname = "p"\n\n[tool.pyright]\ninclude = ["src"]\n',
            "src/pkg/core.py": "class Core:\n    pass\n",
            "scripts/tool.py": "def tool() -> None:\n    pass\n",
        },
    )
    async with _walked(tmp_path / "d", root) as (daemon, editor):
        assert _bound(editor, "src/pkg/core.py")
        assert not _bound(editor, "scripts/tool.py")
        assert _listed(daemon) == _found(editor) == 1
    assert daemon.log_text().count("bind walk: asking") == 1


async def test_the_walk_lists_as_many_files_as_pyright_found(tmp_path: Path) -> None:
    """Globs, a file include, extraPaths and an execution environment: pyright's count, not the tree's."""
    root = _write(
        tmp_path / "proj",
        MAIN
        | {
            "pyrightconfig.json": (
                '{"include": ["pkg", "tools/run.py", "main.py"],'
                ' "exclude": ["**/gen_*", "pkg/vendor", "**/*_old.py"],'
                ' "extraPaths": ["libs"],'
                ' "executionEnvironments": [{"root": "pkg", "extraPaths": ["other"]}]}'
            ),
            "pkg/a.py": "A = 1\n",
            "pkg/sub/b.py": "B = 1\n",
            "pkg/sub/b_old.py": "B = 0\n",
            "pkg/sub/gen_c.py": "C = 1\n",
            "pkg/gen_out/d.py": "D = 1\n",
            "pkg/vendor/e.py": "E = 1\n",
            "pkg/.cache/f.py": "F = 1\n",
            "pkg/env/g.py": "G = 1\n",
            "pkg/env/pyvenv.cfg": "home = /usr\n",
            "pkg/stubs/h.pyi": "H: int\n",
            "tools/run.py": "R = 1\n",
            "tools/other.py": "O = 1\n",
            "libs/lib.py": "L = 1\n",
            "other/x.py": "X = 1\n",
        },
    )
    async with _walked(tmp_path / "d", root) as (daemon, editor):
        # main.py, pkg/a.py, pkg/sub/b.py, pkg/stubs/h.pyi, tools/run.py.
        assert _listed(daemon) == _found(editor) == 5
        assert not _bound(editor, "libs/lib.py") and not _bound(editor, "other/x.py")
    assert daemon.log_text().count("bind walk: asking") == 5


async def test_the_cap_stops_the_walk_and_status_says_so(tmp_path: Path) -> None:
    root = _write(tmp_path / "proj", MAIN | {f"m{n}.py": f"V{n} = {n}\n" for n in range(5)})
    config = TRACE + "\n[servers.pyright]\nprebind_max_files = 2\n"
    async with _walked(tmp_path / "d", root, config, state="2/6 files (cap)") as (daemon, editor):
        # In path order: m0.py and m1.py, then the cap.
        assert _bound(editor, "m0.py") and _bound(editor, "m1.py")
        assert not any(_bound(editor, f"m{n}.py") for n in (2, 3, 4))
        status = daemon.run_cli("status")
        assert "prebind: 2/6 files (cap)" in status.stdout
    assert daemon.log_text().count("bind walk: asking") == 2


async def test_a_malformed_config_falls_back_and_is_logged_once(tmp_path: Path) -> None:
    root = _write(
        tmp_path / "proj",
        MAIN | {"pyrightconfig.json": '{"exclude": ["build"\n', "build/gen.py": "class Gen:\n    pass\n"},
    )
    extra = _write(tmp_path / "extra", {"far.py": "FAR = 1\n"})
    async with _walked(tmp_path / "d", root) as (daemon, editor):
        # pyright reads nothing from a configuration it cannot parse: its defaults, the walk's too.
        assert _bound(editor, "build/gen.py")
        assert _listed(daemon) == _found(editor) == 2
        # A folder added lists the root's files again; the file is said to be unreadable once.
        folder = {"uri": extra.as_uri(), "name": extra.name}
        await editor.notify("workspace/didChangeWorkspaceFolders", {"event": {"added": [folder], "removed": []}})
        with anyio.fail_after(60):
            while not _bound(editor, "far.py"):
                await anyio.sleep(0.05)
        wait_until(lambda: _walk_state(daemon) == "done", what="bind walk of the folder done")
    log = daemon.log_text()
    assert log.count("pyrightconfig.json is not valid JSON") == 1
    assert "binding 3 workspace files ahead" in log
