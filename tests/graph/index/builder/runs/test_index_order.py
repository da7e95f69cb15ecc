"""A full run indexes where the user is first: open files, the searched directory, git's recent files, the rest."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import pytest
from index_fakes import FakeEmbedder, FakeSymbolSource, module_text

from lensmux.graph.index import IndexConfig, Indexer
from lensmux.graph.index.builder.files.walk import WalkedFile
from lensmux.graph.index.builder.runs.order import Focus, RunOrder, git_recent
from lensmux.graph.index.progress import Progress

needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


def _walked(*rels: str) -> list[WalkedFile]:
    return [WalkedFile(rel, "python", 10, 1) for rel in sorted(rels)]


def _git(root: Path, *argv: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false", *argv],
        cwd=root,
        check=True,
        capture_output=True,
    )


def test_open_files_then_the_searched_directory_then_git_recent_then_the_rest() -> None:
    order = RunOrder()
    order.refocus(Focus(open_files=frozenset({"z/open.py"}), directories=frozenset({"here"})))
    todo = _walked("a.py", "b.py", "here/one.py", "here/sub/two.py", "m/recent.py", "m/older.py", "z/open.py")
    taken = [w.rel for w in order.start(todo, ["m/older.py", "gone.py", "m/recent.py"][::-1])]
    assert taken == ["z/open.py", "here/one.py", "here/sub/two.py", "m/recent.py", "m/older.py", "a.py", "b.py"]


def test_without_focus_or_git_the_walk_order_stays() -> None:
    todo = _walked("c.py", "a.py", "b/x.py")
    assert [w.rel for w in RunOrder().start(todo, [])] == ["a.py", "b/x.py", "c.py"]


def test_a_focus_that_arrives_during_the_run_puts_what_is_left_first_newest_first() -> None:
    order = RunOrder()
    taken = order.start(_walked("a.py", "b.py", "one/x.py", "two/y.py", "two/z.py"), [])
    assert next(taken).rel == "a.py"
    assert order.focus_left == 0
    order.refocus(Focus(directories=frozenset({"one"})))
    order.refocus(Focus(directories=frozenset({"two"})))
    order.refocus(Focus(directories=frozenset({"two"})))  # the same search again changes nothing
    assert [w.rel for w in taken] == ["two/y.py", "two/z.py", "one/x.py", "b.py"]
    assert order.focus_left == 3
    order.written(["two/y.py", "one/x.py", "a.py"])
    assert order.focus_left == 1
    order.finish()
    assert order.focus_left is None


def test_a_focus_on_a_file_already_taken_waits_for_its_write() -> None:
    order = RunOrder()
    taken = order.start(_walked("a/x.py", "b.py"), [])
    assert next(taken).rel == "a/x.py"
    order.refocus(Focus(directories=frozenset({"a"})))
    assert order.focus_left == 1
    order.written(["a/x.py"])
    assert order.focus_left == 0


def test_the_root_itself_as_the_searched_directory_focuses_nothing() -> None:
    order = RunOrder()
    order.refocus(Focus(directories=frozenset({""})))
    assert [w.rel for w in order.start(_walked("b.py", "a.py"), [])] == ["a.py", "b.py"]
    assert order.focus_left == 0


@needs_git
def test_git_recent_lists_uncommitted_changes_then_the_last_commits_relative_to_the_root(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    root = repo / "proj"
    (root / "pkg").mkdir(parents=True)
    (repo / "outside.py").write_text("x = 1\n")
    for name in ("old.py", "pkg/first.py", "pkg/second.py", "pkg/edited.py"):
        (root / name).write_text("x = 1\n")
    _git(repo, "init", "-q")
    _git(repo, "add", ".")
    _git(repo, "commit", "-qm", "one")
    (root / "pkg/second.py").write_text("x = 2\n")
    _git(repo, "commit", "-qam", "two")
    (root / "pkg/edited.py").write_text("x = 3\n")
    (root / "pkg/new.py").write_text("x = 4\n")
    (repo / "outside.py").write_text("x = 5\n")

    recent = git_recent(root)
    assert recent[:2] == ["pkg/edited.py", "pkg/new.py"]
    assert recent[2] == "pkg/second.py"
    assert set(recent) == {"old.py", "pkg/first.py", "pkg/second.py", "pkg/edited.py", "pkg/new.py"}


def test_git_recent_outside_a_git_checkout_is_empty(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("x = 1\n")
    assert git_recent(tmp_path) == []
    assert git_recent(tmp_path / "missing") == []


def test_coverage_is_indexed_files_over_indexable_files() -> None:
    progress = Progress()
    progress.walk()
    assert progress.coverage() == 0.0, "nothing is claimed before the walk counted the files"
    progress.begin(4, 10)  # six of ten files are unchanged since the last run
    assert progress.coverage() == pytest.approx(0.6)
    progress.advance(2, 7)
    assert progress.snapshot().coverage == pytest.approx(0.8)
    progress.finish()
    assert progress.coverage() == 1.0
    progress.walk()
    assert progress.coverage() == 1.0, "during the next walk, what the last run left"
    progress.begin(0, 0)
    assert progress.coverage() == 1.0


@pytest.mark.anyio
async def test_a_full_run_asks_for_the_focus_files_first(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    for i in range(12):
        path = root / ("deep/here" if i % 4 == 0 else "lib") / f"mod_{i}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(module_text(i))
    symbols = FakeSymbolSource()
    config = IndexConfig(symbol_concurrency=1, commit_files=2, commit_chunks=8, embed_batch=8)
    focus = Focus(open_files=frozenset({"lib/mod_7.py"}), directories=frozenset({"deep/here"}))
    async with Indexer(root, tmp_path / "store", FakeEmbedder(), symbols, config=config) as ix:
        snapshot = await ix.index_all(focus=focus)
    asked = [p.relative_to(root).as_posix() for p in symbols.calls]
    assert asked[:4] == ["lib/mod_7.py", "deep/here/mod_0.py", "deep/here/mod_4.py", "deep/here/mod_8.py"]
    assert len(asked) == 12 and snapshot.coverage == 1.0


class _Preparers:
    """A run over a.py, b.py and here/x.py focused on here/, a task per file; x.py is prepared once `release`."""

    def __init__(self) -> None:
        self.order = RunOrder()
        self.order.refocus(Focus(directories=frozenset({"here"})))
        self.release = anyio.Event()
        self.steps: list[str] = []

    async def prepare(self, file: WalkedFile) -> str:
        self.steps.append(f"start {file.rel}")
        if file.rel == "here/x.py":
            await self.release.wait()
        self.steps.append(f"end {file.rel}")
        return file.rel

    def start_all(self, tg: anyio.abc.TaskGroup) -> None:
        run = self.order.preparing(self.prepare)
        for file in self.order.start(_walked("a.py", "b.py", "here/x.py"), []):
            tg.start_soon(run, file)


@pytest.mark.anyio
async def test_files_outside_the_focus_wait_until_the_focused_ones_taken_are_written() -> None:
    run = _Preparers()
    async with anyio.create_task_group() as tg:
        run.start_all(tg)
        await anyio.wait_all_tasks_blocked()
        assert run.steps == ["start here/x.py"]
        run.release.set()
        await anyio.wait_all_tasks_blocked()
        assert run.steps == ["start here/x.py", "end here/x.py"], "prepared is not written: the others still wait"
        run.order.written(["here/x.py"])
    assert len(run.steps) == 6


@pytest.mark.anyio
async def test_a_waiting_file_a_new_focus_covers_goes_on_at_once() -> None:
    run = _Preparers()
    async with anyio.create_task_group() as tg:
        run.start_all(tg)
        await anyio.wait_all_tasks_blocked()
        run.order.refocus(Focus(open_files=frozenset({"b.py"})))
        await anyio.wait_all_tasks_blocked()
        assert run.steps == ["start here/x.py", "start b.py", "end b.py"]
        assert run.order.focus_left == 2
        run.release.set()
        run.order.written(["here/x.py", "b.py"])
    assert len(run.steps) == 6 and run.order.focus_left == 0


class _SlowServer(FakeSymbolSource):
    """Answers the file named `slow` only once `release` is set, and says when it was asked."""

    def __init__(self, slow: str) -> None:
        super().__init__()
        self.slow, self.asked, self.release = slow, anyio.Event(), anyio.Event()

    async def document_symbols(self, path: Path, language_id: str, text: str) -> list[dict[str, Any]] | None:
        if path.name == self.slow:
            self.asked.set()
            await self.release.wait()
        return await super().document_symbols(path, language_id, text)


@pytest.mark.anyio
async def test_while_the_server_is_slow_on_the_focus_nothing_else_is_asked_or_embedded(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    for i in range(10):
        path = root / ("here" if i == 9 else "lib") / f"mod_{i}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(module_text(i))
    symbols, embedder = _SlowServer("mod_9.py"), FakeEmbedder()
    async with Indexer(root, tmp_path / "store", embedder, symbols) as ix, anyio.create_task_group() as tg:
        tg.start_soon(lambda: ix.index_all(focus=Focus(directories=frozenset({"here"}))))
        await symbols.asked.wait()
        await anyio.wait_all_tasks_blocked()
        # The fake records a file once answered: the slow one is asked, no other one.
        assert symbols.calls == [] and embedder.calls == 0
        symbols.release.set()
    assert "here/mod_9.py" in embedder.texts[0] and len(symbols.calls) == 10
