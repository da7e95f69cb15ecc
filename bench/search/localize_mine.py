"""Mine the localization benchmark from real history: per commit, its message and the functions it changed.

For each project (localize_projects.py) the script reads the history of a local
copy of its repository (a `fetch` mirror or any `git clone`), takes the non-merge
commits of the project's window (`since` .. `pin`), keeps those whose message
describes a change (localize_message.py) and whose diff changes at least one function
or method of the project's own code in the parent's tree (localize_answers.py), and
draws at most `cap` of them with a fixed seed. The query is the cleaned message; the
answers are the changed functions, located in the parent, which is what gets indexed.
A commit that changes more than `--max-answers` functions is a sweeping refactor, not
a localization question, and is left out (counted).

C and C++ functions come from clangd's documentSymbol on the parent's files, checked
out in a local clone (bench/out/localize/mine/<project>/), so a function is what the
index will have; Python's from `ast` on the parent's text.

    python -m bench.search.localize_mine /work/.mirror/pallets+flask/repo /work/.mirror/jqlang+jq/repo
    python -m bench.search.localize_mine --all /work/.mirror          # every project whose mirror is there
    python -m bench.search.localize_mine flask=/path/to/flask/clone --cap 10

A path is matched to its project by its `owner+name` directory (what `fetch` makes) or
named `project=PATH`. Output: bench/out/localize/mined-<project>.json (never committed:
the messages and code are the projects' own text) and a summary on stdout.
"""

from __future__ import annotations

import json
import logging
import os
import random
import statistics
import sys
import time
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
from support.daemon_proc import VENV_BIN
from support.lspclient import LspClient, LspClientError

from bench import OUT_DIR as BENCH_OUT
from bench.runner import arg_parser
from bench.search.localize_answers import (
    Function,
    changed_functions,
    clangd_functions,
    code_hunks,
    python_functions,
)
from bench.search.localize_git import (
    Commit,
    GitError,
    changed_paths,
    checkout,
    commit_info,
    git,
    rev_list,
    shared_clone,
    show,
)
from bench.search.localize_message import clean_message, skip_reason
from bench.search.localize_projects import PROJECTS, Project, answer_language, is_library_path
from lensmux.adapters.registry import adapter_for
from lensmux.daemon.config import load_config
from lensmux.graph.index.builder.files.junk import junk_reason
from lensmux.graph.index.builder.files.languages import language_for
from lensmux.graph.index.builder.files.walk import DEFAULT_MAX_FILE_BYTES

log = logging.getLogger(__name__)

OUT_DIR = BENCH_OUT / "localize"
MAX_ANSWERS = 10
NO_USER_CONFIG = Path("/nonexistent/lensmux-bench.toml")


class MineError(Exception):
    """A project could not be mined."""


class Clangd:
    """clangd as the daemon runs it, on a local clone moved to each parent in turn (started when first needed)."""

    def __init__(self, work: Path) -> None:
        self.work = work
        self._client: LspClient | None = None
        self._stack: AsyncExitStack | None = None
        self._at: str | None = None

    @asynccontextmanager
    async def session(self) -> AsyncIterator[Clangd]:
        """Stop clangd (if it was started) on the way out."""
        async with AsyncExitStack() as stack:
            self._stack = stack
            try:
                yield self
            finally:
                if self._client is not None:
                    with anyio.move_on_after(10, shield=True):
                        try:
                            await self._client.shutdown_and_exit(timeout=10)
                        except (LspClientError, OSError) as exc:
                            log.warning("clangd shutdown: %s", exc)
                self._stack = None

    async def _start(self) -> LspClient:
        if self._stack is None:
            raise MineError("clangd asked outside its session")
        config = load_config(NO_USER_CONFIG).servers["clangd"]
        # No background index: a clone has no compilation database, and documentSymbol needs none.
        argv = [a for a in adapter_for(config).command(self.work, os.getpid()) if a != "--background-index"]
        env = {"PATH": f"{VENV_BIN}:{os.environ.get('PATH', '')}", **config.env}
        client = await self._stack.enter_async_context(
            LspClient.over_process(argv, cwd=self.work, env=env, name="localize-mine")
        )
        await client.initialize(self.work, initialization_options=config.initialization_options or None, timeout=120)
        self._client = client
        return client

    async def functions(self, commit: str, path: str, text: str) -> list[Function]:
        """The function definitions clangd sees in `path` as of `commit` (the clone is checked out there)."""
        if self._at != commit:
            await anyio.to_thread.run_sync(checkout, self.work, commit)
            self._at = commit
        client = self._client or await self._start()
        file = self.work / path
        uri = await client.open(file, language_for(path) or "c", text)
        try:
            symbols = await client.request("textDocument/documentSymbol", {"textDocument": {"uri": uri}}, timeout=120)
        finally:
            await client.close(uri)
        return clangd_functions(path, text, symbols if isinstance(symbols, list) else [])


async def answers_of(project: Project, repo: Path, commit: Commit, clangd: Clangd) -> tuple[list[Function], str]:
    """The functions of the parent the commit changed, and why there are none when there are none."""
    paths = [
        (old, new)
        for _, old, new in changed_paths(repo, commit.parent, commit.sha)
        if answer_language(old) is not None and is_library_path(project, old)
    ]
    if not paths:
        return [], "no library source changed"
    found: list[Function] = []
    for old, new in paths:
        text = show(repo, commit.parent, old)
        if len(text.encode()) > DEFAULT_MAX_FILE_BYTES or junk_reason(old, text) is not None:
            continue
        language = answer_language(old) or "c"
        hunks = code_hunks(text, "" if new is None else show(repo, commit.sha, new), language)
        if not hunks:
            continue
        if language == "python":
            functions = python_functions(old, text)
        else:
            functions = await clangd.functions(commit.parent, old, text)
        found += changed_functions(functions, hunks, python=language == "python")
    return found, "" if found else "no function's code changed"


async def mine_project(
    project: Project, repo: Path, cap: int, max_answers: int, work_dir: Path | None = None
) -> dict[str, Any]:
    """Draw the project's commits; every count on the way (clangd's clone under `work_dir`, default bench/out)."""
    if git(repo, "cat-file", "-t", project.pin, check=False).strip() != "commit":
        raise MineError(f"{project.name}: {repo} does not have the pinned commit {project.pin}")
    order = rev_list(repo, project.pin, project.since)
    position = {sha: i for i, sha in enumerate(order)}
    shuffled = list(order)
    random.Random(project.seed).shuffle(shuffled)
    reasons: Counter[str] = Counter()
    chosen: list[dict[str, Any]] = []
    seen_queries: set[str] = set()
    work = shared_clone(repo, (work_dir or OUT_DIR / "mine") / project.name)
    async with Clangd(work).session() as clangd:
        for sha in shuffled:
            if len(chosen) >= cap:
                break
            commit = commit_info(repo, sha)
            if commit is None:
                reasons["merge or root"] += 1
                continue
            skip = skip_reason(commit.subject)
            query = clean_message(commit.message) if skip is None else None
            if skip is not None or query is None:
                reasons[f"message: {skip or 'too short'}"] += 1
                continue
            if query in seen_queries:
                reasons["same message as another commit (cherry-pick)"] += 1
                continue
            answers, why = await answers_of(project, repo, commit, clangd)
            if not answers:
                reasons[why] += 1
                continue
            if len(answers) > max_answers:
                reasons[f"more than {max_answers} functions changed"] += 1
                continue
            seen_queries.add(query)
            reasons["kept"] += 1
            chosen.append(
                {
                    "sha": commit.sha,
                    "parent": commit.parent,
                    "date": commit.date,
                    "subject": commit.subject,
                    "query": query,
                    "answers": [a.as_dict() for a in answers],
                }
            )
            log.info("%s: %d/%d %s (%d answers)", project.name, len(chosen), cap, commit.sha[:10], len(answers))
    chosen.sort(key=lambda c: position[c["sha"]])
    looked = sum(reasons.values())
    return {
        "project": project.name,
        "github": project.github,
        "repo": str(repo),
        "pin": project.pin,
        "since": project.since,
        "seed": project.seed,
        "cap": cap,
        "max_answers": max_answers,
        "kind": project.kind,
        "window_commits": len(order),
        "looked_at": looked,
        "reasons": dict(reasons.most_common()),
        "commits": chosen,
    }


def resolve_targets(args: list[str], all_under: Path | None) -> list[tuple[Project, Path]]:
    """(project, repository) pairs from `PATH` and `name=PATH` arguments, or every mirror under a directory."""
    out: list[tuple[Project, Path]] = []
    if all_under is not None:
        for project in PROJECTS.values():
            for candidate in (all_under / project.mirror_name / "repo", all_under / project.mirror_name):
                if (candidate / "HEAD").is_file() or (candidate / ".git").exists():
                    out.append((project, candidate))
                    break
    for arg in args:
        name, _, path = arg.rpartition("=")
        repo = Path(path)
        if not name:
            key = repo.name if repo.name != "repo" else repo.parent.name
            matches = [p for p in PROJECTS.values() if key in {p.mirror_name, p.name, p.github.split("/")[1]}]
            if not matches:
                raise MineError(f"{arg}: no project of {sorted(PROJECTS)} matches {key!r}; name it: project=PATH")
            name = matches[0].name
        if name not in PROJECTS:
            raise MineError(f"unknown project {name!r}; known: {sorted(PROJECTS)}")
        out.append((PROJECTS[name], repo))
    return out


def summary_line(mined: dict[str, Any]) -> str:
    """Commits kept and the sizes of their answer sets."""
    sizes = [len(c["answers"]) for c in mined["commits"]]
    if not sizes:
        return f"{mined['project']}: no commit kept ({mined['reasons']})"
    return (
        f"{mined['project']}: {len(sizes)} commits of {mined['looked_at']} looked at ({mined['window_commits']} in "
        f"the window); answers per commit: mean {statistics.fmean(sizes):.1f}, median {statistics.median(sizes):g}, "
        f"1: {sizes.count(1)}, 2-3: {sum(1 for s in sizes if 2 <= s <= 3)}, 4+: {sum(1 for s in sizes if s >= 4)}"
    )


def main(argv: list[str] | None = None) -> int:
    """Mine the named projects."""
    parser = arg_parser(__doc__)
    parser.add_argument("repos", nargs="*", help="PATH or project=PATH of a repository with full history")
    parser.add_argument("--all", type=Path, metavar="DIR", help="every project whose `fetch` mirror is under DIR")
    parser.add_argument("--cap", type=int, help="commits per project (default: each project's own, 35)")
    parser.add_argument("--max-answers", type=int, default=MAX_ANSWERS, help="leave out commits changing more")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        targets = resolve_targets(args.repos, args.all)
    except MineError as exc:
        print(f"bench.search.localize_mine: {exc}", file=sys.stderr)
        return 1
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    for project, repo in targets:
        started = time.monotonic()
        try:
            mined = anyio.run(mine_project, project, repo, args.cap or project.cap, args.max_answers)
        except (MineError, GitError, LspClientError) as exc:
            print(f"bench.search.localize_mine: {project.name}: {exc}", file=sys.stderr)
            return 1
        mined["mined_in_s"] = round(time.monotonic() - started, 1)
        out = OUT_DIR / f"mined-{project.name}.json"
        out.write_text(json.dumps(mined, indent=1))
        print(summary_line(mined), flush=True)
        print(f"  skipped: {json.dumps({k: v for k, v in mined['reasons'].items() if k != 'kept'})}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
