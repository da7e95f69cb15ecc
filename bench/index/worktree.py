"""A second worktree, and a re-clone, of an indexed repository: time to their first complete search (issue 23, item 3).

    python -m bench.index.worktree                   # rich 13.8.1 on main, 13.9.4 on branch next
    python -m bench.index.worktree --no-cache-too    # and the same in a daemon without the vector cache
    python -m bench.index.worktree --tree mono100k   # the 100k-line monorepo, tornado 6.5.1 on next

`--tree rich` (the default): a git history made from two pinned PyPI sdists of rich: the
older release committed on `main`, the newer on `next`.
`--tree mono100k`: the 100k-line monorepo of the monorepo benchmark
(bench/index/monorepo_tree.py: tornado 6.4.2, brotli 1.2.1 and libyaml from pinned sdists,
one commit each, on `main`), and on `next` one commit that upgrades ONE of its projects:
tornado's directory holds the pinned sdist of tornado 6.5.1 instead (the directory keeps
its name, as a monorepo's project directory does across an upgrade; brotli and libyaml
are the same files). In one benchmark daemon (pyright, and clangd for C, answering documentSymbol; the model
loaded before anything is timed):

1. *first*: `lensmux index repo --wait`, then `lensmux search` from it (the time to its
   first complete search: the whole run written, coverage 1);
2. *worktree*: `git worktree add ../wt next`, then the same on it;
3. *agent's worktree*: `git worktree add -b agent ../agent main`, a new branch at the indexed
   commit, as an agent that works in a worktree of its own starts (its edits come later);
4. *re-clone*: `git clone repo clone` (main again), then the same on it.

Each line's figure is the wall time from the git command (none for the first) to the
search's answer, and its ratio to the first's; the goal is <= 0.10. Beside it, each step's
CPU seconds (the daemon's, and every live language server's process group) and their ratio
to the first's: the load of other sessions moves them much less than the wall. Where each run's time
went comes from the daemon's own run clock (logged at the end of a run: the model busy,
idle waiting for prepared files, writing) and the vector cache's and the symbol cache's
hits and misses (`lensmux status`; the symbol cache's count pyright's and clangd's files);
each daemon's log stays in its state directory under `--out`'s roots.
`--no-cache-too` repeats the four in a daemon with `[daemon.index] vector_cache_mb = 0`:
what the cache buys.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from support.daemon_proc import DaemonProc

from bench import OUT_DIR as BENCH_OUT
from bench.daemon_launch import BenchDaemonError, config_text, index_with_cli
from bench.daemon_launch import bench_daemon as launch_daemon
from bench.fetch_corpus import CorpusError, Sdist, fetch_sdist
from bench.index.corpus import CORPORA
from bench.index.monorepo_tree import build as build_monorepo
from bench.runner import add_common_options, arg_parser, finish, result_header, run_and_save
from bench.stats import group_cpu_seconds, process_cpu_seconds

OUT_DIR = BENCH_OUT / "index"
OLDER = Sdist("rich", "13.8.1", "8260cda28e3db6bf04d2d1ef4dbc03ba80a824c88b0e7668a0f23126a424844a")
NEWER = CORPORA["rich"]
QUERY = "render a table with rounded borders"
# The monorepo's branch `next`: tornado upgraded from the tree's 6.4.2 to 6.5.1 (89 of its
# files differ, about 3,300 lines changed of the tree's 136k walked).
TORNADO_NEXT = Sdist("tornado", "6.5.1", "84ceece391e8eb9b2b95578db65e920d2a61070260594819589609ba9bc6308c")
MONO_QUERY = "parse the headers of an HTTP request"
GIT = ("git", "-c", "user.name=bench", "-c", "user.email=bench@localhost", "-c", "init.defaultBranch=main")
_RUN_LINE = re.compile(
    r"indexed (\d+) files of (\S+) in ([\d.]+) s; model busy ([\d.]+) s, idle ([\d.]+) s \(([\d.]+) s"
    r"[^)]*\); writing ([\d.]+) s"
)


class GitFailed(BenchDaemonError):
    """A git command of the benchmark failed."""


class SearchFailed(BenchDaemonError):
    """`lensmux search` failed or answered from part of the index."""


def _git(*args: str, cwd: Path) -> None:
    done = subprocess.run([*GIT, *args], cwd=cwd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise GitFailed(f"git {' '.join(args)} in {cwd}: {done.stderr[-2000:]}")


def _replace_tree(source: Path, dest: Path) -> None:
    for entry in dest.iterdir():
        if entry.name != ".git":
            shutil.rmtree(entry) if entry.is_dir() else entry.unlink()
    shutil.copytree(source, dest, dirs_exist_ok=True)


def make_repository(base: Path, out_dir: Path = OUT_DIR) -> Path:
    """`base/repo`: the older release on main, the newer on next, main checked out."""
    older, newer = fetch_sdist(OLDER, out_dir), fetch_sdist(NEWER, out_dir)
    shutil.rmtree(base, ignore_errors=True)
    repo = base / "repo"
    repo.mkdir(parents=True)
    _git("init", "-q", cwd=repo)
    _replace_tree(older, repo)
    _git("add", "-A", cwd=repo)
    _git("commit", "-q", "-m", f"rich {OLDER.version}", cwd=repo)
    _git("checkout", "-q", "-b", "next", cwd=repo)
    _replace_tree(newer, repo)
    _git("add", "-A", cwd=repo)
    _git("commit", "-q", "-m", f"rich {NEWER.version}", cwd=repo)
    _git("checkout", "-q", "main", cwd=repo)
    return repo


def make_monorepo(base: Path, out_dir: Path = OUT_DIR) -> Path:
    """`base/monorepo`: the 100k monorepo on main, tornado 6.5.1 in tornado's directory on next."""
    newer = fetch_sdist(TORNADO_NEXT, out_dir)
    # build() takes its place as out_dir/roots/<label>: a label relative to that puts it under base.
    tree = build_monorepo("100k", str(base.relative_to(out_dir / "roots")), out_dir)
    repo = tree.root
    _git("checkout", "-q", "-b", "next", cwd=repo)
    old = tree.directory("tornado")
    shutil.rmtree(old)
    shutil.copytree(newer, old)
    _git("add", "-A", "--force", cwd=repo)
    _git("commit", "-q", "--no-verify", "-m", f"Upgrade tornado to {TORNADO_NEXT.version}", cwd=repo)
    _git("checkout", "-q", "main", cwd=repo)
    return repo


@dataclass(frozen=True, slots=True)
class TreeChoice:
    """One `--tree`: its repository (main and next), the query, and its sdists for the report."""

    make: Callable[[Path, Path], Path]
    query: str
    corpus: tuple[str, ...]


TREES = {
    "rich": TreeChoice(make_repository, QUERY, (OLDER.description, NEWER.description)),
    "mono100k": TreeChoice(
        make_monorepo,
        MONO_QUERY,
        (
            "the 100k monorepo of bench/index/monorepo_tree.py on main (tornado 6.4.2, brotli, libyaml)",
            f"next: {TORNADO_NEXT.description} in tornado's directory",
        ),
    ),
}


def _search(daemon: DaemonProc, root: Path, query: str) -> dict[str, Any]:
    done = daemon.run_cli("search", query, "--root", str(root), "--json", timeout=600)
    if done.returncode != 0:
        raise SearchFailed(f"lensmux search in {root} failed ({done.returncode}): {done.stderr[-2000:]}")
    answer: dict[str, Any] = json.loads(done.stdout)
    if float(answer.get("coverage", 1.0)) < 1.0:
        raise SearchFailed(f"the search in {root} answered from {answer['coverage']} of the files")
    return answer


def _cache(daemon: DaemonProc, which: str = "vector_cache") -> dict[str, Any]:
    cache = (daemon.status().get("index") or {}).get(which)
    return dict(cache) if isinstance(cache, dict) else {}


def _clock(daemon: DaemonProc, root: Path) -> dict[str, float] | None:
    """The daemon's run clock for `root`'s run: total, model busy and idle, starved, writing (s)."""
    for match in _RUN_LINE.finditer(daemon.log_text()):
        if Path(match.group(2)) == root.resolve():
            files, total, busy, idle, starved, writing = (float(match.group(i)) for i in (1, 3, 4, 5, 6, 7))
            return {
                "files": files,
                "run_s": total,
                "model_busy_s": busy,
                "idle_s": idle,
                "starved_s": starved,
                "writing_s": writing,
            }
    return None


def _cpu(daemon: DaemonProc) -> tuple[float, dict[int, float], dict[int, str]]:
    """CPU seconds so far of the daemon, and of each live language server's process group by pid; their names."""
    live = [i for i in daemon.instances() if i.get("pid")]
    servers = {int(i["pid"]): group_cpu_seconds(int(i["pid"])) for i in live}
    return process_cpu_seconds(daemon.proc.pid), servers, {int(i["pid"]): str(i["server"]) for i in live}


def _measure(
    daemon: DaemonProc, label: str, root: Path, git: tuple[str, ...] | None, cwd: Path, *, query: str
) -> dict[str, Any]:
    before = _cache(daemon)
    symbols_before = _cache(daemon, "symbol_cache")
    cpu_before = _cpu(daemon)
    started = time.perf_counter()
    if git is not None:
        _git(*git, cwd=cwd)
    git_s = time.perf_counter() - started
    summary, index_s = index_with_cli(daemon, root, timeout=3600)
    searched = time.perf_counter()
    answer = _search(daemon, root, query)
    total = time.perf_counter() - started
    after = _cache(daemon)
    symbols_after = _cache(daemon, "symbol_cache")
    cpu_after = _cpu(daemon)
    # CPU is what the load of other sessions on this machine changes least: the ratio to watch beside the wall's.
    servers_s = sum(cpu - cpu_before[1].get(pid, 0.0) for pid, cpu in cpu_after[1].items())
    by_server: dict[str, float] = {}
    for pid, cpu in cpu_after[1].items():
        name = cpu_after[2][pid]
        by_server[name] = round(by_server.get(name, 0.0) + cpu - cpu_before[1].get(pid, 0.0), 1)
    return {
        "label": label,
        "root": str(root),
        "git_s": round(git_s, 2),
        "index_s": round(index_s, 2),
        "search_s": round(time.perf_counter() - searched, 2),
        "to_first_search_s": round(total, 2),
        "files": summary.get("files"),
        "chunks": summary.get("chunks"),
        "cache_hits": int(after.get("hits", 0)) - int(before.get("hits", 0)),
        "cache_misses": int(after.get("misses", 0)) - int(before.get("misses", 0)),
        "symbol_hits": int(symbols_after.get("hits", 0)) - int(symbols_before.get("hits", 0)),
        "symbol_misses": int(symbols_after.get("misses", 0)) - int(symbols_before.get("misses", 0)),
        "clock": _clock(daemon, root),
        "daemon_cpu_s": round(cpu_after[0] - cpu_before[0], 1),
        "servers_cpu_s": round(servers_s, 1),
        "servers_cpu_by_server_s": by_server,
        "results": len(answer.get("results") or answer.get("ranked_symbols") or []),
    }


def _series(base: Path, tree: TreeChoice, out_dir: Path, *, cache: bool) -> list[dict[str, Any]]:
    # Nothing of an earlier run: its indexes and vector cache (the daemon's state) would answer.
    shutil.rmtree(base, ignore_errors=True)
    repo = tree.make(base / "git", out_dir)
    where = repo.parent
    config = config_text() + ("" if cache else "\n[daemon.index]\nvector_cache_mb = 0\n")
    with launch_daemon(base / "daemon", config, log_level="info", stop_timeout=120) as daemon:
        # The model loads on the first index request: pay it before anything is timed.
        empty = base / "empty"
        empty.mkdir(parents=True, exist_ok=True)
        index_with_cli(daemon, empty, timeout=1800)
        q = tree.query
        runs = [_measure(daemon, "first index", repo, None, repo, query=q)]
        worktree = ("worktree", "add", "-q", "../wt", "next")
        runs.append(_measure(daemon, "git worktree add (next)", where / "wt", worktree, repo, query=q))
        agent = ("worktree", "add", "-q", "-b", "agent", "../agent", "main")
        runs.append(_measure(daemon, "git worktree add -b agent (main)", where / "agent", agent, repo, query=q))
        clone = ("clone", "-q", str(repo), "clone")
        runs.append(_measure(daemon, "git clone (main)", where / "clone", clone, where, query=q))
    first = runs[0]["to_first_search_s"]
    first_cpu = runs[0]["daemon_cpu_s"] + runs[0]["servers_cpu_s"]
    for r in runs:
        r["ratio"] = round(r["to_first_search_s"] / first, 3) if first else None
        cpu = r["daemon_cpu_s"] + r["servers_cpu_s"]
        r["cpu_ratio"] = round(cpu / first_cpu, 3) if first_cpu else None
    return runs


def run(args: Any) -> dict[str, Any]:
    """The four roots with the cache, and (--no-cache-too) without."""
    started = time.monotonic()
    result = result_header("bench.index.worktree", pyright=True)
    tree = TREES[args.tree]
    result["tree"] = args.tree
    result["corpus"] = list(tree.corpus)
    result["query"] = tree.query
    base = args.out / "roots" / ("worktree" if args.tree == "rich" else f"worktree-{args.tree}")
    result["with_cache"] = _series(base / "cache", tree, args.out, cache=True)
    if args.no_cache_too:
        result["without_cache"] = _series(base / "no-cache", tree, args.out, cache=False)
    return finish(result, started)


def _row(r: dict[str, Any]) -> str:
    clock = r.get("clock") or {}
    where = f"{clock.get('model_busy_s', '-')} / {clock.get('starved_s', '-')}" if clock else "- (nothing to write)"
    writing = clock.get("writing_s", "-") if clock else "-"
    return (
        f"| {r['label']} | {r['files']} | {r['chunks']} | {r['git_s']} | {r['index_s']} | {r['search_s']} "
        f"| **{r['to_first_search_s']}** | {r['ratio']} | {r['cache_hits']} / {r['cache_misses']} "
        f"| {r.get('symbol_hits', '-')} / {r.get('symbol_misses', '-')} | {where} "
        f"| {writing} | {r.get('daemon_cpu_s', '-')} / {r.get('servers_cpu_s', '-')} | {r.get('cpu_ratio', '-')} |"
    )


def render(result: dict[str, Any]) -> str:
    """The tables for docs/benchmarks.md."""
    head = (
        "| root | files | chunks | git, s | index --wait, s | search, s | to first complete search, s "
        "| ratio to first | vector cache hits / misses | symbol cache hits / misses "
        "| model busy / every embedder waiting for prepared files, s "
        "| writing, s | CPU s: daemon / language servers | CPU ratio to first |\n"
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
    )
    out = [f"With the vector cache:\n\n{head}", *(_row(r) for r in result["with_cache"])]
    if "without_cache" in result:
        out += ["", f"Without it (`[daemon.index] vector_cache_mb = 0`):\n\n{head}"]
        out += [_row(r) for r in result["without_cache"]]
    load = result["machine"]
    start, end = (", ".join(map(str, load[k])) for k in ("load_avg_at_start", "load_avg_at_end"))
    out.append(
        f"\n{'; '.join(result['corpus'])}; query {result['query']!r}; `{result['command']}`; "
        f"load average at the start {start}, at the end {end}\n"
    )
    return "\n".join(out)


def main() -> int:
    """`python -m bench.index.worktree`."""
    parser = arg_parser(__doc__)
    parser.add_argument("--tree", choices=sorted(TREES), default="rich", help="the repository (default rich)")
    parser.add_argument("--no-cache-too", action="store_true", help="also run without the vector cache")
    add_common_options(parser, OUT_DIR)
    args = parser.parse_args()
    name = "worktree" if args.tree == "rich" else f"worktree-{args.tree}"
    return run_and_save(args, name, run, render, (BenchDaemonError, CorpusError, subprocess.CalledProcessError))


if __name__ == "__main__":
    sys.exit(main())
