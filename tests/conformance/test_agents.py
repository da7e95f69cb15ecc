"""Differential conformance for AI agents: among many clients of one shared server, each agent
is told exactly what it is told when it has the real server alone.

Per server, each agent profile's session (agent_session.py) runs once against the server alone;
then CROWD agents (the profiles in turn) and two busy editors share one instance through one
real daemon, the agents joining a server that has finished starting. Each aspect of each agent's
transcript is compared by its own test with its profile's direct run. Known failures are in
xfails.AGENT_XFAILS, strict: a fix makes the entry go.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from conformance.agent_plans import PLANS
from conformance.agent_runner import CROWD, Crowd, crowd_agents, run_crowd
from conformance.profiles import load_profile, profile_names
from conformance.run_once import RunOnce
from conformance.xfails import AGENT_TIMING, AGENT_XFAILS, xfail_marks

pytestmark = [pytest.mark.slow]

AGENT_ASPECTS = (
    "initialize",
    "startup",
    "symbols",
    "hover",
    "definition",
    "references",
    "diagnostics",
    "registrations",
    "notifications",
    "log_messages",
    "progress_messages",
    "shutdown",
)

# Servers the suite cannot run here, with why.
UNAVAILABLE = {"omnisharp": "OmniSharp is not installed here (no registry this project reaches ships it)"}


Crowds = RunOnce[str, Crowd]


@pytest.fixture(scope="session")
def crowds(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Crowds]:
    """The session-wide cache of agent runs: each server's crowd is run once, on first use."""
    base = tmp_path_factory.mktemp("agents")
    yield RunOnce(lambda server: run_crowd(server, base / server))


def _params() -> list[object]:
    out: list[object] = []
    for server in sorted(PLANS):
        for agent, profile in crowd_agents(server):
            for aspect in AGENT_ASPECTS:
                marks = xfail_marks((server, profile, aspect), AGENT_XFAILS, AGENT_TIMING)
                out.append(pytest.param(server, agent, aspect, marks=marks, id=f"{server}-{agent}-{aspect}"))
    return out


@pytest.mark.parametrize(("server", "agent", "aspect"), _params())
def test_agent_in_a_crowd_is_told_what_it_alone_is_told(crowds: Crowds, server: str, agent: str, aspect: str) -> None:
    """The aspect of one agent's transcript among many clients is the same as alone."""
    crowd = crowds.get(server)
    shared_run = crowd.shared[agent]
    alone, through = crowd.direct[shared_run.profile].transcript.aspect(aspect), shared_run.transcript.aspect(aspect)
    assert through == alone, (
        f"{server}/{agent}: '{aspect}' differs among {CROWD} agents and 2 editors through lensmux\n"
        f"alone:   {json.dumps(alone, ensure_ascii=False)[:3000]}\n"
        f"through: {json.dumps(through, ensure_ascii=False)[:3000]}"
    )


def _servers() -> list[object]:
    reasons = {server: pytest.mark.skip(reason=why) for server, why in UNAVAILABLE.items()}
    return [pytest.param(s, marks=[reasons[s]] if s in reasons else [], id=s) for s in [*sorted(PLANS), *UNAVAILABLE]]


@pytest.mark.parametrize("server", _servers())
def test_the_crowd_really_shared_one_busy_instance(crowds: Crowds, server: str) -> None:
    """Every agent finished its session through lensmux while both editors kept working."""
    crowd = crowds.get(server)
    assert sorted(crowd.shared) == sorted(agent for agent, _ in crowd_agents(server))
    assert len(crowd.shared) >= 8
    assert all(rounds >= 2 for rounds in crowd.editor_rounds), crowd.editor_rounds
    started = [line for line in crowd.daemon_log.splitlines() if f"new instance {server}@" in line]
    # Agents that name their directory only where the server does not look (rootUri, for pyright)
    # share a server without a workspace, as each would have alone; all the others share one.
    without = [line for line in started if line.endswith("(no workspace)")]
    assert len(started) - len(without) == 1, "the clients did not share one instance"
    assert len(without) <= 1, without


@pytest.mark.parametrize(
    ("server", "profile"), [(server, profile) for server in sorted(PLANS) for profile in profile_names("agent", server)]
)
def test_direct_agent_session_exercises_the_protocol(crowds: Crowds, server: str, profile: str) -> None:
    """Against the server alone, the agent session gets answers (so a comparison can fail)."""
    direct = crowds.get(server).direct[profile].transcript
    symbols = [v for _, v in direct.aspect("symbols")]
    assert all(answer.get("result") for answer in symbols), symbols
    hovers = [v for _, v in direct.aspect("hover")]
    assert hovers and all("result" in answer for answer in hovers), hovers
    references = dict(direct.aspect("references"))
    assert all(len(answer.get("result") or []) >= 1 for answer in references.values()), references
    assert any(len(answer.get("result") or []) >= 2 for answer in references.values()), references
    if load_profile(profile).habits.ready_for(server).waits:
        assert dict(direct.aspect("startup"))["ready signal received"] is True, direct.aspect("startup")
