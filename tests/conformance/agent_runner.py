"""Agent sessions run alone against the server, then many at once on one shared instance.

The direct runs go one after another (one per agent profile: the sessions of one profile are the
same script). The crowd runs on one real daemon: two editors open the project first and stay
busy (BusyEditor, pausing as an editor's user does), so every agent joins an instance that is
already running; then the agents start nearly together, each its own `lensmux client` bridge.
A waiting agent waits in the crowd at most as long as its direct run needed plus READY_MARGIN.
"""

from __future__ import annotations

import os
import re
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path

import anyio
from support.daemon_proc import VENV_BIN, running_daemon
from support.lspclient import LspClient, LspTimeout

from conformance.agent_plans import PLANS, AgentPlan
from conformance.agent_session import AgentSession
from conformance.busy import BusyEditor
from conformance.profiles import load_profile, profile_names
from conformance.servers import write_project
from conformance.told import LOG
from conformance.transcript import Transcript

CROWD = 8  # agents on the shared instance
EDITORS = ("neovim-0.10", "vscode")  # the two editors next to them
EDITOR_PAUSE = 0.6  # between an editor's rounds (the user reads what the editor shows)
STAGGER = 0.15  # seconds between two agents' starts: several at once, not in lockstep
READY_MARGIN = 10.0
STARTED_WAIT = 20.0  # at most, for the editors to be told the server has started


@dataclass(frozen=True)
class AgentRun:
    """One agent session's transcript, and how long it waited for its ready signal."""

    agent: str  # "serena#2": the second serena in the crowd
    profile: str
    transcript: Transcript
    ready_wait: float


@dataclass(frozen=True)
class Crowd:
    """One server's runs: each profile alone, then every agent of the crowd through lensmux."""

    server: str
    direct: dict[str, AgentRun]
    shared: dict[str, AgentRun]
    editor_rounds: tuple[int, ...]
    daemon_log: str


def crowd_agents(server: str) -> list[tuple[str, str]]:
    """(agent, profile) of the crowd: the server's agent profiles in turn, CROWD of them."""
    names = profile_names("agent", server)
    out: list[tuple[str, str]] = []
    for index in range(CROWD):
        profile = names[index % len(names)]
        out.append((f"{profile}#{index // len(names) + 1}", profile))
    return out


async def run_direct(plan: AgentPlan, profile_name: str, base: Path) -> AgentRun:
    """The agent session against its own server, as the agent runs it without lensmux."""
    root, _ = write_project(plan.case, base)
    env = {"PATH": f"{VENV_BIN}:{os.environ.get('PATH', '')}"}
    profile = load_profile(profile_name)
    async with LspClient.over_process(plan.case.argv, cwd=root, env=env, name=profile_name) as client:
        session = AgentSession(client, plan, profile, root)
        transcript = await session.run()
    return AgentRun(profile_name, profile_name, transcript, session.ready_wait)


async def run_shared(
    plan: AgentPlan,
    agents: list[tuple[str, str]],
    limits: dict[str, float],
    base: Path,
    argv: list[str],
) -> tuple[dict[str, AgentRun], tuple[int, ...]]:
    """The crowd through lensmux (argv: `lensmux client <server>`), next to two busy editors.

    The agents start once the first editor was told the server has started (`plan.started`):
    every one of them joins a server that has finished starting, as an agent does when an editor
    has had the project open for a while.
    """
    root, _ = write_project(plan.case, base)
    runs: dict[str, AgentRun] = {}

    async def agent(index: int, name: str, profile_name: str) -> None:
        await anyio.sleep(index * STAGGER)
        profile = load_profile(profile_name)
        async with LspClient.over_process(argv, cwd=root, name=name) as client:
            session = AgentSession(client, plan, profile, root, ready_limit=limits.get(profile_name))
            transcript = await session.run()
        runs[name] = AgentRun(name, profile_name, transcript, session.ready_wait)

    async with AsyncExitStack() as stack:
        editors = []
        for name in EDITORS:
            client = await stack.enter_async_context(LspClient.over_process(argv, cwd=root, name=name))
            editors.append(BusyEditor(client, plan.case, load_profile(name), root))
        for editor in editors:
            await editor.start()
        if plan.started is not None:
            # Every agent joins a server that has finished starting (the editors were told so).
            started = re.compile(plan.started)
            try:
                await editors[0].client.wait_notification(
                    LOG, lambda p: bool(started.search(str(p.get("message", "")))), timeout=STARTED_WAIT
                )
            except LspTimeout:
                pass  # then the agents join a server still starting; their transcripts show it
        stop = anyio.Event()
        async with anyio.create_task_group() as group:
            for editor in editors:
                group.start_soon(editor.keep_busy, stop, EDITOR_PAUSE)
            try:
                async with anyio.create_task_group() as crowd:
                    for index, (name, profile_name) in enumerate(agents):
                        crowd.start_soon(agent, index, name, profile_name)
            finally:
                stop.set()
        for editor in editors:
            await editor.client.shutdown_and_exit()
    return runs, tuple(editor.rounds for editor in editors)


def run_crowd(server: str, base: Path) -> Crowd:
    """Every agent profile of server alone, then the crowd on one daemon."""
    plan = PLANS[server]
    agents = crowd_agents(server)
    direct: dict[str, AgentRun] = {}
    # Same directory names in every run, so that normalised paths compare equal.
    for profile_name in sorted({profile for _, profile in agents}):
        direct[profile_name] = anyio.run(run_direct, plan, profile_name, base / f"direct-{profile_name}" / "w")
    limits = {name: run.ready_wait + READY_MARGIN for name, run in direct.items()}
    with running_daemon(base / "d") as daemon:
        argv = daemon.client_argv(server)
        shared, rounds = anyio.run(run_shared, plan, agents, limits, base / "shared" / "w", argv)
        log = daemon.log_text()
    return Crowd(server, direct, shared, rounds, log)
