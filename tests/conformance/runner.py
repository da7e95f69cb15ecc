"""Runs one session twice: (a) alone against the real server, (b) through a real lensmux daemon
while a second, busy editor with another profile shares the same server instance.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import anyio
from support.daemon_proc import VENV_BIN, running_daemon
from support.lspclient import LspClient

from conformance.busy import BusyEditor
from conformance.profiles import Profile, load_profile, profile_names
from conformance.servers import CASES, ServerCase, write_project
from conformance.session import Session
from conformance.transcript import Transcript


@dataclass(frozen=True)
class Pair:
    """The two transcripts of the first client, and who the second client was."""

    direct: Transcript
    shared: Transcript
    partner: str
    partner_rounds: int
    daemon_log: str


def partner_of(profile: str) -> str:
    """The second client's profile: the next profile in sorted order (always a different one)."""
    names = profile_names()
    return names[(names.index(profile) + 1) % len(names)]


async def run_direct(case: ServerCase, profile: Profile, base: Path) -> Transcript:
    """The session against the server alone, as the editor would run it without lensmux."""
    root, extra = write_project(case, base)
    # The daemon's servers find the venv first on PATH (daemon_proc.lensmux_env); so does this one.
    env = {"PATH": f"{VENV_BIN}:{os.environ.get('PATH', '')}"}
    async with LspClient.over_process(case.argv, cwd=root, env=env, name=profile.name) as client:
        transcript = await Session(client, case, profile, root, extra).run()
        await client.shutdown_and_exit()
    return transcript


async def run_shared(
    case: ServerCase, profile: Profile, partner: Profile, base: Path, argv: list[str]
) -> tuple[Transcript, int]:
    """The session through lensmux (argv: `lensmux client <server>`) while partner is busy."""
    root, extra = write_project(case, base)
    async with (
        LspClient.over_process(argv, cwd=root, name=partner.name) as b_client,
        LspClient.over_process(argv, cwd=root, name=profile.name) as a_client,
    ):
        busy = BusyEditor(b_client, case, partner, root)
        await busy.start()
        stop = anyio.Event()
        async with anyio.create_task_group() as group:
            group.start_soon(busy.keep_busy, stop)
            try:
                session = Session(a_client, case, profile, root, extra, while_command_runs=busy.ask_now)
                transcript = await session.run()
            finally:
                stop.set()
        await a_client.shutdown_and_exit()
        await b_client.shutdown_and_exit()
    return transcript, busy.rounds


def run_pair(server: str, profile_name: str, base: Path) -> Pair:
    """Both runs of one (server, profile); the daemon is a real subprocess with its own dirs."""
    case = CASES[server]
    profile, partner = load_profile(profile_name), load_profile(partner_of(profile_name))
    # Same directory names in both runs, so that normalised paths compare equal.
    direct = anyio.run(run_direct, case, profile, base / "direct" / "w")
    with running_daemon(base / "d") as daemon:
        argv = daemon.client_argv(case.name)
        shared, rounds = anyio.run(run_shared, case, profile, partner, base / "shared" / "w", argv)
        log = daemon.log_text()
    return Pair(direct, shared, partner.name, rounds, log)
