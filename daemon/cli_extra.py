"""Subcommands beyond the multiplexer core, registered on the main parser."""

from __future__ import annotations

import argparse
from collections.abc import Callable

Common = Callable[[argparse.ArgumentParser], argparse.ArgumentParser]


def add_commands(sub: argparse._SubParsersAction[argparse.ArgumentParser], common: Common) -> None:
    """Add index, search, model and service subcommands."""
