"""Differential conformance: through lensmux, next to a busy second editor, the first editor
sees exactly what it sees when it has the real server alone (modulo what the spec leaves free).

One session per (server, profile) is run twice (runner.py) and each aspect of the two
transcripts is compared by its own test. Known failures are listed in xfails.py against the
issue point they show; a fix turns such an xfail into an unexpected pass, which fails the run
until the entry is removed.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from conformance.profiles import profile_names
from conformance.run_once import RunOnce
from conformance.runner import Pair, run_pair
from conformance.servers import CASES
from conformance.xfails import TIMING, XFAILS, xfail_marks

pytestmark = [pytest.mark.slow]

ASPECTS = (
    "initialize",
    "encoding",
    "documents",
    "diagnostics",
    "navigation",
    "references",
    "cancel",
    "rename",
    "code_action",
    "quickfix",
    "workspace_folders",
    "registrations",
    "progress",
    "notifications",
    "startup",
    "log_messages",
    "progress_messages",
)


Runs = RunOnce[tuple[str, str], Pair]


@pytest.fixture(scope="session")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Runs]:
    """The session-wide cache of conformance runs: each (server, profile) pair is run once, on first use."""
    base = tmp_path_factory.mktemp("conformance")
    yield RunOnce(lambda key: run_pair(key[0], key[1], base / f"{key[0]}-{key[1]}"))


def _params() -> list[object]:
    out: list[object] = []
    for server, case in CASES.items():
        for profile in profile_names():
            for aspect in ASPECTS:
                if (aspect == "workspace_folders" and not case.extra_folder) or (
                    aspect == "quickfix" and not case.quickfix_at
                ):
                    continue
                marks = xfail_marks((server, profile, aspect), XFAILS, TIMING)
                out.append(pytest.param(server, profile, aspect, marks=marks, id=f"{server}-{profile}-{aspect}"))
    return out


@pytest.mark.parametrize(("server", "profile", "aspect"), _params())
def test_shared_server_is_invisible(runs: Runs, server: str, profile: str, aspect: str) -> None:
    """The aspect of the first client's transcript is the same alone and through lensmux."""
    pair = runs.get((server, profile))
    assert pair.partner_rounds >= 2, "the second client was not busy during the session"
    shared, direct = pair.shared.aspect(aspect), pair.direct.aspect(aspect)
    assert shared == direct, (
        f"{server}/{profile}: '{aspect}' differs through lensmux (busy partner: {pair.partner})\n"
        f"alone:   {json.dumps(direct, ensure_ascii=False)[:3000]}\n"
        f"through: {json.dumps(shared, ensure_ascii=False)[:3000]}"
    )


@pytest.mark.parametrize("profile", profile_names())
@pytest.mark.parametrize("server", sorted(CASES))
def test_direct_session_exercises_the_protocol(runs: Runs, server: str, profile: str) -> None:
    """Against the server alone, the session really gets answers (so a comparison can fail)."""
    direct = runs.get((server, profile)).direct
    answers = dict(direct.aspect("navigation"))
    assert answers["definition"]["result"], answers
    assert len(answers["references"]["result"]) >= 2, answers
    assert dict(direct.aspect("rename"))["rename"].get("result"), direct.aspect("rename")
    assert dict(direct.aspect("code_action"))["applyEdit requests received"], direct.aspect("code_action")
    after_error = json.dumps([v for label, v in direct.aspect("diagnostics") if "adds an error" in label])
    assert '"severity": 1' in after_error, direct.aspect("diagnostics")
    assert dict(direct.aspect("encoding"))["announced encoding is one the client offered"] is True
