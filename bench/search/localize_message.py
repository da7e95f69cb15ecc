"""Commit messages for the localization benchmark: which describe a change, and the query each gives.

A commit is a candidate when its subject reads as a bug fix, a feature or a
refactor: merges and reverts, version bumps and releases, formatting and lint,
typing-only changes, typo and spelling fixes, docs, tests, CI and dependency
updates are not (the file filters in localize_mine.py catch the docs-, test- and
CI-only commits whose subject does not say so).

The query is the subject and the body with what a developer's question would not
carry: issue and pull-request references (`(#1234)`, `Fixes #12`, `gh-7`,
`owner/repo#3`), URLs, trailers (sign-offs, co-authors, reviewers, `PR-URL:`,
`Refs:`), cherry-pick notes and rulers, whitespace collapsed.
"""

from __future__ import annotations

import re

__all__ = ["MAX_QUERY_CHARS", "clean_message", "skip_reason"]

# The daemon refuses longer queries (graph/search/api.py, MAX_QUERY_CHARS).
MAX_QUERY_CHARS = 4000
MIN_QUERY_WORDS = 3

_I = re.IGNORECASE
# Subject patterns of commits that describe no code change a question would ask for.
_SKIP_SUBJECT: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("merge", re.compile(r"^merge\b", _I)),
    ("revert", re.compile(r"^(revert|undo|back ?out)\b", _I)),
    ("fixup", re.compile(r"^(wip\b|fixup!|squash!|amend!)", _I)),
    (
        "version",
        re.compile(
            r"^(v?\d+(\.\d+)+\b|(release|releasing|prepare|preparing|start|begin|bump|set|update)\b.*"
            r"\b(version|release|\d+\.\d+)|version\b)|\bbump(ed)? (the )?version\b|\brelease notes?\b",
            _I,
        ),
    ),
    ("changelog", re.compile(r"\b(changelog|changes\.rst|news(\.md)?|authors|copyright|licen[cs]e)\b", _I)),
    (
        "docs",
        re.compile(
            r"^(docs?|documentation|readme|man ?page)\b|^\w+\s*\((docs?)\)|\bdocstrings?\b|"
            r"^(update|fix|improve|clarify|add|expand|rewrite|reword)\s+(the\s+|some\s+)?(docs?|documentation|comments?)\b",
            _I,
        ),
    ),
    ("typo", re.compile(r"\b(typos?|spelling|misspell\w*|codespell|grammar)\b", _I)),
    (
        "formatting",
        re.compile(
            r"\bre-?format(ted|ting)?\b|\b(run|ran|apply|applied)\s+(clang-format|black|isort|ruff|prettier|pyupgrade|"
            r"pre-commit)\b|^(clang-format|clang-tidy|black|isort|ruff|flake8|pylint|pre-commit|prettier|pyupgrade)\b|"
            r"\blint(s|ing|er)?\b|\btrailing whitespace\b|\bcod(e|ing) ?style\b|^style\b|"
            r"^(fix |update )?(code )?formatting$",
            _I,
        ),
    ),
    (
        "typing",
        re.compile(r"\b(typing|type hints?|annotations?|annotate types|type ?check\w*|mypy|pyright|typeshed)\b", _I),
    ),
    (
        "ci",
        re.compile(
            r"^(ci|build|chore|test|tests|testing)\s*(\(|:)|\b(ci|github actions?|workflows?|dependabot|tox|nox|"
            r"travis|appveyor|azure pipelines?|cirrus|codecov|gitignore|requirements\.txt)\b|"
            r"^(update|bump|upgrade|pin)\b.*\b(deps|dependencies|requirements)\b",
            _I,
        ),
    ),
)

_URL = re.compile(r"\b(?:https?|ftp)://\S+|\bwww\.\S+", _I)
_TRAILER = re.compile(
    r"^\s*(?:[A-Za-z]+(?:-[A-Za-z]+)*-by|Co-?authored|PR-URL|Backport-PR-URL|Refs?|Fix(?:es|ed)?|Close[sd]?|"
    r"Resolve[sd]?|See(?:-also)?|Bug|Issue|Change-Id|Link|Cc|CVE|Ticket)\s*:.*$",
    _I | re.MULTILINE,
)
_CHERRY = re.compile(r"^\s*\(cherry picked from commit [0-9a-f]+\)\s*$|^\s*git-svn-id:.*$", _I | re.MULTILINE)
# Lines bots add to squashed commits.
_BOT_LINE = re.compile(r"^.*(pre-commit\.ci|pre-commit\.com|for more information, see\s*$).*$", _I | re.MULTILINE)
_RULER = re.compile(r"^\s*([-=*_#~])\1{2,}\s*$", re.MULTILINE)
_REF = r"(?:[\w.-]+/[\w.-]+)?#\d+|\bgh-\d+\b"
_PAREN_REFS = re.compile(
    rf"\(\s*(?:(?:issue|pr|pull request|see|fix(?:es)?|closes?|refs?)\s*:?\s*)?"
    rf"(?:{_REF})(?:\s*[,;&]?\s*(?:and\s+)?(?:{_REF}))*\s*\)",
    _I,
)
_VERB_REFS = re.compile(
    rf"\b(?:fix(?:es|ed)?|close[sd]?|resolve[sd]?|refs?|see|addresse?s?|related to|part of|for)\s*:?\s*"
    rf"(?:issues?\s*|prs?\s*|pull requests?\s*)?(?:{_REF})(?:\s*[,;&]?\s*(?:and\s+)?(?:{_REF}))*",
    _I,
)
_EMPTY_BRACKETS = re.compile(r"(?<![\w\])])\(\s*\)|(?<![\w\])])\[\s*\]")
_BARE_REFS = re.compile(rf"(?:\b(?:issues?|prs?|pull requests?)\s*)?(?:{_REF})", _I)


def skip_reason(subject: str) -> str | None:
    """Why a commit with this subject line is not a candidate, or None."""
    for reason, pattern in _SKIP_SUBJECT:
        if pattern.search(subject):
            return reason
    return None


def clean_message(message: str) -> str | None:
    """The query a commit message gives, or None when too little is left of it."""
    text = message.replace("\r\n", "\n")
    text = _CHERRY.sub("", text)
    text = _TRAILER.sub("", text)
    text = _BOT_LINE.sub("", text)
    text = _URL.sub("", text)
    text = _PAREN_REFS.sub("", text)
    text = _VERB_REFS.sub("", text)
    text = _BARE_REFS.sub("", text)
    text = _RULER.sub("", text)
    lines = []
    for raw in text.split("\n"):
        # What removing a reference leaves: `: ` at a line's start, empty brackets (not a call's `f()`),
        # doubled spaces, a line of punctuation.
        line = " ".join(_EMPTY_BRACKETS.sub("", raw).split()).strip(" ,;:-")
        line = re.sub(r" ([.,;:!?])(?=\s|$)", r"\1", line)
        if re.search(r"\w", line):
            lines.append(line)
    query = "\n".join(lines)
    if len(query) > MAX_QUERY_CHARS:
        query = query[: query.rfind(" ", 0, MAX_QUERY_CHARS)].rstrip()
    if len(re.findall(r"[A-Za-z]{2,}", query)) < MIN_QUERY_WORDS:
        return None
    return query
