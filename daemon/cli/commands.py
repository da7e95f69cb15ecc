"""Subcommands beyond the multiplexer core: service units, doctor."""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lensmux.daemon.cli.connect.autostart import discover_runtime_dir
from lensmux.daemon.cli.connect.control_client import ControlClient, ControlClientError, RemoteError

if TYPE_CHECKING:
    from lensmux.daemon.config import Config

# `lensmux search` waits this long for a first index of its root.
INDEX_WAIT_CLI = 3600.0
# Run from a project's root (no directory below it to index first), `lensmux search` waits for the
# whole index until the run has gone on this long, then answers from what is indexed (saying its coverage).
PARTIAL_AFTER_S = 30.0
Common = Callable[[argparse.ArgumentParser], argparse.ArgumentParser]


def _config(args: argparse.Namespace) -> Config | None:
    from lensmux.daemon.config import ConfigInvalid, load_config

    path = Path(args.config) if getattr(args, "config", None) else None
    try:
        return load_config(path, explicit=path is not None)
    except ConfigInvalid as exc:
        print(f"lensmux: invalid configuration: {exc}", file=sys.stderr)
        return None


def cmd_install_service(args: argparse.Namespace) -> int:
    """Write the user units; with --now enable the socket."""
    from lensmux.daemon.service.errors import ServiceError
    from lensmux.daemon.service.units import install_service

    config = _config(args)
    if config is None:
        return 2
    try:
        report = install_service(sorted(config.enabled_servers()), args.now)
    except ServiceError as exc:
        print(f"lensmux: {exc}", file=sys.stderr)
        return 1
    print(report.message)
    return 0


def cmd_uninstall_service(args: argparse.Namespace) -> int:
    """Stop, disable and remove the user units."""
    from lensmux.daemon.service.errors import ServiceError
    from lensmux.daemon.service.units import uninstall_service

    try:
        report = uninstall_service()
    except ServiceError as exc:
        print(f"lensmux: {exc}", file=sys.stderr)
        return 1
    print(report.message)
    return 0


def cmd_doctor(args: argparse.Namespace) -> int:
    """Check servers, model, runtime directory, units and daemon; non-zero if a required check fails."""
    from lensmux.daemon.cli.doctor import run_checks

    config = _config(args)
    if config is None:
        return 2
    runtime_dir = discover_runtime_dir(args.runtime_dir)
    checks = run_checks(config, runtime_dir, start_servers=not args.quick)
    for check in checks:
        print(check.line())
    return 1 if any(c.required and not c.ok for c in checks) else 0


def _call(args: argparse.Namespace, method: str, params: object, timeout: float | None = 600.0) -> Any:
    runtime_dir = discover_runtime_dir(args.runtime_dir)
    with ControlClient(runtime_dir, timeout=timeout) as ctl:
        return ctl.call(method, params)


def cmd_index(args: argparse.Namespace) -> int:
    """Start or refresh indexing of a root; with --wait show progress, then a summary."""
    from lensmux.daemon.cli.connect.autostart import ensure_daemon
    from lensmux.daemon.cli.views.progress_bar import ProgressBar

    root = str(Path(args.root).resolve())
    # As `search` does: a CI job running `lensmux index . --publish` has no daemon yet.
    ensure_daemon(discover_runtime_dir(args.runtime_dir), not args.no_autostart)
    try:
        # A publisher indexes every file itself (its snapshot must not rest on an older one).
        status = _call(args, "lensmux/index", {"root": root, "overlay": False} if args.publish else {"root": root})
    except RemoteError as exc:
        print(f"lensmux: {exc}", file=sys.stderr)
        return 1
    if not args.wait and not args.publish:
        print(json.dumps(status) if args.json else f"indexing {root} (lensmux status shows progress)")
        return 0
    bar = None if args.json else ProgressBar()
    started_runs = int(status["runs"])
    while status["running"] or int(status["runs"]) <= started_runs:
        if bar is not None:
            bar.index_update(status)
        time.sleep(0.2)
        status = _call(args, "lensmux/indexStatus", {"root": root})
    if bar is not None:
        bar.index_update(status)
        bar.close()
    summary = {
        "root": status["root"],
        "files": status["files"],
        "symbols": status["symbols"],
        "chunks": status["chunks"],
        "seconds": status["elapsed_s"],
        "error": status["error"] or status.get("last_error"),
    }
    if args.json and not args.publish:
        print(json.dumps(summary))
    elif not args.json:
        print(
            f"indexed {summary['root']}: {summary['files']} files, {summary['symbols']} symbols, "
            f"{summary['chunks']} chunks in {summary['seconds']}s"
            + (f" (error: {summary['error']})" if summary["error"] else "")
        )
    if status["error"]:
        return 1
    return _publish(args, root) if args.publish else 0


def _publish(args: argparse.Namespace, root: str) -> int:
    """Copy the root's index into the team store (`[index] store = "postgres"`) as its HEAD commit's."""
    try:
        done = _call(args, "lensmux/publish", {"root": root}, timeout=3600.0)
    except RemoteError as exc:
        print(f"lensmux: {exc}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(done))
    else:
        print(
            f"published {done['commit'][:12]} of repository {done['repository'][:12]}: {done['files']} files, "
            f"{done['chunks']} chunks, {done['vectors']} vectors in {done['seconds']}s"
        )
    return 0


def cmd_model(args: argparse.Namespace) -> int:
    """`model build` builds the embedding model into the cache; `model info` shows it."""
    import msgspec

    from lensmux.daemon.cli.views.progress_bar import ProgressBar
    from lensmux.graph.embedding.model.store import build_model, model_info
    from lensmux.graph.embedding.spec import EmbeddingError

    try:
        if args.action == "build":
            bar = ProgressBar()
            info = build_model(
                args.precision, force=args.force, progress=lambda stage, f: bar.update(f, stage), model=args.model
            )
            bar.close()
        else:
            info = model_info(args.precision, model=args.model)
    except EmbeddingError as exc:
        print(f"lensmux: {exc}", file=sys.stderr)
        return 1
    data = msgspec.to_builtins(info)
    try:
        data["daemon"] = _call(args, "lensmux/status", None, timeout=5)["index"]["model"]
    except ControlClientError:
        data["daemon"] = "not running"
    print(json.dumps(data, indent=2))
    return 0


def cmd_search(args: argparse.Namespace) -> int:
    """Hybrid search as a person uses it: daemon and index on first use, readable results."""
    from lensmux.daemon.cli.connect.autostart import ensure_daemon
    from lensmux.daemon.cli.connect.index_wait import describe, ensure_indexed
    from lensmux.daemon.cli.connect.project_root import enclosing_project
    from lensmux.daemon.cli.views.progress_bar import ProgressBar
    from lensmux.daemon.cli.views.search_view import render_results, use_colour

    runtime_dir = discover_runtime_dir(args.runtime_dir)
    here = Path.cwd()
    root = Path(args.root).resolve() if args.root else enclosing_project(here)
    ensure_daemon(runtime_dir, not args.no_autostart)
    bar = ProgressBar() if sys.stderr.isatty() else None
    announced: list[bool] = []

    def progress(status: dict[str, Any]) -> None:
        if bar is not None:
            bar.index_update(status)
            announced.append(True)
        elif status.get("running") and not announced:
            # Not a terminal: one line, not a redrawn bar.
            print(f"lensmux: indexing {root} for its first search (this happens once)...", file=sys.stderr)
            announced.append(True)

    try:
        done, status = ensure_indexed(runtime_dir, root, progress, INDEX_WAIT_CLI, focus=here, patience=PARTIAL_AFTER_S)
    except RemoteError as exc:
        print(f"lensmux: cannot index {root}: {exc}", file=sys.stderr)
        return 1
    if bar is not None and announced:
        bar.close()
    if not done:
        print(f"lensmux: indexing {root} did not finish: {status.get('error') or describe(status)}", file=sys.stderr)
        return 1
    # The working directory goes first if the root is still being indexed (graph/index/builder/runs/order.py).
    params: dict[str, Any] = {"query": args.query, "top_k": args.top_k, "root": str(root), "focus": str(here)}
    if args.format:
        params["context"] = {"format": args.format, "budget_tokens": args.budget_tokens}
    try:
        result = _call(args, "lensmux/hybridSearch", params, timeout=120)
    except RemoteError as exc:
        print(f"lensmux: {exc}", file=sys.stderr)
        return 1
    coverage = float(result.get("coverage", 1.0))
    if coverage < 1.0:
        first = f" ({here.relative_to(root)}/ first)" if here != root and here.is_relative_to(root) else ""
        print(
            f"lensmux: {root} is still being indexed: this answer covers {int(coverage * 100)}% of its files"
            f"{first}; search again for the rest",
            file=sys.stderr,
        )
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    if args.format:
        for warning in result.get("warnings", []):
            print(f"lensmux: warning: {warning}", file=sys.stderr)
        print(result["context"]["context"])
        return 0
    print(render_results(result, use_colour(sys.stdout)))
    return 0


def add_commands(sub: argparse._SubParsersAction[argparse.ArgumentParser], common: Common) -> None:
    """Add service and doctor subcommands."""
    install = sub.add_parser("install-service", help="install the systemd user units")
    install.add_argument("--now", action="store_true", help="also enable and start lensmux.socket")
    install.add_argument("--config", help="configuration whose servers get sockets")
    install.set_defaults(func=cmd_install_service)

    uninstall = sub.add_parser("uninstall-service", help="remove the systemd user units")
    uninstall.set_defaults(func=cmd_uninstall_service)

    doctor = common(sub.add_parser("doctor", help="diagnose servers, model, sockets and units"))
    doctor.add_argument("--config", help="configuration file")
    doctor.add_argument("--quick", action="store_true", help="do not start the servers")
    doctor.set_defaults(func=cmd_doctor)

    index = common(sub.add_parser("index", help="index a workspace root for search"))
    index.add_argument("root", help="the workspace root")
    index.add_argument("--wait", action="store_true", help="show progress until done, then a summary")
    index.add_argument("--json", action="store_true", help="print the summary as JSON")
    index.add_argument("--no-autostart", action="store_true", help="fail instead of starting a daemon")
    index.add_argument(
        "--publish",
        action="store_true",
        help="then copy the index into the team store as the index of the checked-out commit (implies --wait)",
    )
    index.set_defaults(func=cmd_index)

    from lensmux.daemon.cli.team_admin import add_team_command

    add_team_command(sub)

    search = common(sub.add_parser("search", help="hybrid code search over an indexed root"))
    search.add_argument("query")
    search.add_argument("--root", help="the workspace root (default: the project enclosing the current directory)")
    search.add_argument("--no-autostart", action="store_true", help="fail instead of starting a daemon")
    search.add_argument("--top-k", type=int, default=10)
    shape = search.add_mutually_exclusive_group()
    shape.add_argument("--json", action="store_true", help="the full JSON response")
    shape.add_argument("--format", choices=["markdown", "xml", "plain"], help="LLM-ready context instead")
    search.add_argument("--budget-tokens", type=int, default=4000, help="token budget of --format context")
    search.set_defaults(func=cmd_search)

    model = common(sub.add_parser("model", help="build or inspect the embedding model"))
    model.add_argument("action", choices=["build", "info"])
    model.add_argument("--precision", choices=["int8", "fp32"], default="int8")
    model.add_argument("--force", action="store_true", help="rebuild even if cached")
    model.add_argument(
        "--model",
        choices=["all-MiniLM-L6-v2", "multilingual-e5-small"],
        default="all-MiniLM-L6-v2",
        help="which packaged model ([daemon.embedding] model picks the daemon's)",
    )
    model.set_defaults(func=cmd_model)
