"""The mining rules of the localization benchmark (bench/search/localize_*.py) on a repository built here.

Which commit messages describe a change, what a query keeps of a message, and which
functions of the parent's tree a commit changed: for Python by `ast`, for C by the
real clangd, as `python -m bench.search.localize_mine` does on real history.
"""

from __future__ import annotations

import os
import subprocess
import textwrap
from pathlib import Path

import pytest

from bench.search.localize_answers import changed_functions, code_hunks, python_functions
from bench.search.localize_message import clean_message, skip_reason
from bench.search.localize_mine import mine_project
from bench.search.localize_projects import Project

PY_V1 = textwrap.dedent(
    '''\
    """A tiny package."""
    import functools


    @functools.cache
    def alpha(x):
        """Alpha."""
        return x + 1


    class Box:
        def open(self):
            return self.lid


    def beta(value):
        # retries once
        return value * 2
    '''
)
C_V1 = textwrap.dedent(
    """\
    #include "lib.h"

    static int twice(int x);

    int add(int a, int b) {
        return a + b;
    }

    static int twice(int x) {
        return x * 2;
    }
    """
)


def _git(repo: Path, *args: str, date: str = "2024-03-01T12:00:00+00:00") -> str:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "T",
        "GIT_AUTHOR_EMAIL": "t@example.org",
        "GIT_COMMITTER_NAME": "T",
        "GIT_COMMITTER_EMAIL": "t@example.org",
        "GIT_AUTHOR_DATE": date,
        "GIT_COMMITTER_DATE": date,
    }
    done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, env=env, check=True)
    return done.stdout.strip()


def _commit(repo: Path, files: dict[str, str], message: str, day: int) -> str:
    for path, text in files.items():
        (repo / path).parent.mkdir(parents=True, exist_ok=True)
        (repo / path).write_text(text)
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", message, date=f"2024-03-{day:02d}T12:00:00+00:00")
    return _git(repo, "rev-parse", "HEAD")


@pytest.mark.parametrize(
    ("subject", "reason"),
    [
        ("Merge pull request #12 from a/b", "merge"),
        ("Revert 'Add the frobnicator'", "revert"),
        ("Bump version to 2.3.1", "version"),
        ("Release 1.4.0", "version"),
        ("docs: explain the cache", "docs"),
        ("Fix typo in error message", "typo"),
        ("Run black on the package", "formatting"),
        ("Add type hints to the loader", "typing"),
        ("ci: test on Python 3.13", "ci"),
        ("Fix crash when the session cookie is empty", None),
        ("Add --library-path long option for -L", None),
        ("Support async template context processors", None),
    ],
)
def test_message_filter_keeps_changes_and_skips_the_rest(subject: str, reason: str | None) -> None:
    assert skip_reason(subject) == reason


def test_query_drops_issue_references_trailers_and_urls() -> None:
    message = (
        "Fix #2793: process_iter() skips zombie processes (#2818)\n\n"
        "The iterator dropped a zombie while reading its name (see #2790).\n"
        "Fixes #41, closes gh-7 and python/cpython#99.\n"
        "See https://github.com/a/b/issues/3 for the report.\n\n"
        "Signed-off-by: Some One <one@example.org>\n"
        "Co-authored-by: Other <other@example.org>\n"
    )
    query = clean_message(message)
    assert query is not None
    assert "#" not in query and "gh-7" not in query and "http" not in query
    assert "Signed-off-by" not in query and "Co-authored" not in query and "one@example.org" not in query
    assert query.startswith("process_iter() skips zombie processes")
    assert "The iterator dropped a zombie while reading its name." in query.split("\n")


def test_query_of_a_bare_reference_is_none() -> None:
    assert clean_message("Fix #12 (#13)\n\nSigned-off-by: A <a@b.c>") is None


def test_python_answers_are_parent_functions_touched_by_code() -> None:
    # Two lines inserted at the top shift every child line: answers keep the parent's lines.
    child = (
        "import os\nimport sys\n"
        + PY_V1.replace("return self.lid", "if self.closed:\n            raise ValueError\n        return self.lid")
        .replace("# retries once", "# retries once, then gives up")  # a comment only: beta unchanged
        .replace("return x + 1", "return x + 1\n    # after")  # a comment appended to alpha
        + "\n\ndef gamma():\n    return 3\n"  # added after the last function: not an answer
    )
    hunks = code_hunks(PY_V1, child, "python")
    functions = python_functions("pkg/core.py", PY_V1)
    changed = changed_functions(functions, hunks, python=True)
    assert [(f.qualname, f.first_line, f.end_line) for f in changed] == [("Box.open", 11, 12)]


def test_python_body_appended_after_last_line_belongs_to_the_function() -> None:
    child = PY_V1 + "    return None\n"  # deeper than beta's `def`: beta's body grows
    changed = changed_functions(python_functions("p.py", PY_V1), code_hunks(PY_V1, child, "python"), python=True)
    assert [f.qualname for f in changed] == ["beta"]


def test_python_decorator_change_changes_the_function() -> None:
    child = PY_V1.replace("@functools.cache", "@functools.lru_cache(maxsize=8)")
    changed = changed_functions(python_functions("p.py", PY_V1), code_hunks(PY_V1, child, "python"), python=True)
    assert [(f.qualname, f.first_line) for f in changed] == [("alpha", 4)]


@pytest.mark.slow
@pytest.mark.anyio
async def test_mining_a_history_with_python_and_c(tmp_path: Path) -> None:
    repo = tmp_path / "tiny"
    repo.mkdir()
    _git(repo, "init", "-q")
    _commit(
        repo,
        {"pkg/core.py": PY_V1, "src/lib.c": C_V1, "src/lib.h": "int add(int a, int b);\n", "tests/t.py": "x = 1\n"},
        "Start the project",
        1,
    )
    c_fix = _commit(
        repo,
        {
            "src/lib.c": "// licence\n\n"
            + C_V1.replace("return a + b;", "long s = (long)a + b;\n    return (int)s;").replace(
                "twice(int x);", "twice(int);"
            )
        },
        "Fix overflow in add for large numbers",
        2,
    )
    _commit(repo, {"pkg/core.py": PY_V1.replace('"""Alpha."""', '"""Alpha, plus one."""')}, "Update the docs", 3)
    _commit(repo, {"tests/t.py": "x = 2\n"}, "Make the tests check larger values", 4)
    py_v2 = PY_V1.replace('"""Alpha."""', '"""Alpha, plus one."""')
    _commit(repo, {"pkg/core.py": py_v2.replace("# retries once", "# retries once more")}, "Explain beta's retry", 5)
    py_v3 = py_v2.replace("# retries once", "# retries once more")
    py_fix = _commit(
        repo,
        {
            "pkg/core.py": "import os\n"
            + py_v3.replace("return value * 2", "if value is None:\n        return 0\n    return value * 2")
        },
        "Fix crash in beta when given None (#42)\n\nFixes #41\n\nSigned-off-by: T <t@example.org>",
        6,
    )
    _commit(repo, {"pkg/core.py": "import os\n" + py_v3}, "Bump version to 1.2.0", 7)
    head = _git(repo, "rev-parse", "HEAD")
    project = Project("tiny", "example/tiny", head, "2024-01-01", "python+c", cap=10)

    mined = await mine_project(project, repo, cap=10, max_answers=10, work_dir=tmp_path / "work")

    by_sha = {c["sha"]: c for c in mined["commits"]}
    assert set(by_sha) == {c_fix, py_fix}
    c_answers = by_sha[c_fix]["answers"]
    assert [(a["path"], a["qualname"], a["first_line"]) for a in c_answers] == [("src/lib.c", "add", 4)]
    py_commit = by_sha[py_fix]
    assert [(a["path"], a["qualname"], a["first_line"], a["end_line"]) for a in py_commit["answers"]] == [
        ("pkg/core.py", "beta", 15, 17)
    ]
    assert py_commit["query"] == "Fix crash in beta when given None"
    assert mined["reasons"] == {
        "kept": 2,
        "message: docs": 1,
        "message: version": 1,
        "no library source changed": 1,
        "no function's code changed": 1,
        "merge or root": 1,
    }
