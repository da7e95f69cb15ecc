"""Subcommands beyond the multiplexer core: service units, doctor."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

from lensmux.daemon import paths
from lensmux.daemon.config import Config, ConfigInvalid, load_config

Common = Callable[[argparse.ArgumentParser], argparse.ArgumentParser]


def _config(args: argparse.Namespace) -> Config | None:
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
    from lensmux.daemon.doctor import run_checks

    config = _config(args)
    if config is None:
        return 2
    runtime_dir = Path(args.runtime_dir) if args.runtime_dir else paths.default_runtime_dir()
    checks = run_checks(config, runtime_dir, start_servers=not args.quick)
    for check in checks:
        print(check.line())
    return 1 if any(c.required and not c.ok for c in checks) else 0


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
