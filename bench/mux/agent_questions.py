"""The projects of the agent-sessions benchmark and the cross-file questions asked on each.

A question is what an agent toolkit asks about a file it has not opened: Serena's
SolidLSP opens the file, sends the request, closes the file. Positions are found
in the text (a definition's name, a use's name), so a question stays right if the
pinned sdist is ever replaced. Two answers are compared through `canonical`: the
same locations in any order are the same answer (what "complete" means here);
`identical` additionally asks for the same order.

The real project is tornado (pinned sdist of bench.search.corpus, ~43k lines),
copied once to a private root; the tiny one is the test suite's demo project.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from support.lspclient import path_uri
from support.projects import write_py_project

from bench.fetch_corpus import CorpusError, fetch_sdist
from bench.search.corpus import OUT_DIR as SEARCH_OUT
from bench.search.corpus import PROJECTS


@dataclass(frozen=True, slots=True)
class Question:
    """One request at the position of `name`'s `occurrence`-th appearance after `anchor` in `path`."""

    label: str
    method: str
    path: str
    anchor: str
    name: str

    def params(self, root: Path) -> dict[str, Any]:
        """The request's params (references exclude the declaration, as Serena asks)."""
        line, character = self.position(root)
        params: dict[str, Any] = {
            "textDocument": {"uri": path_uri(root / self.path)},
            "position": {"line": line, "character": character},
        }
        if self.method == "textDocument/references":
            params["context"] = {"includeDeclaration": False}
        return params

    def position(self, root: Path) -> tuple[int, int]:
        """0-based line and UTF-16 column of the name (the projects are ASCII)."""
        for number, line in enumerate((root / self.path).read_text(encoding="utf-8").split("\n")):
            at = line.find(self.anchor)
            if at >= 0:
                column = line.find(self.name, at)
                if column >= 0:
                    return number, column
        raise CorpusError(f"{self.path}: no line with {self.anchor!r} followed by {self.name!r}")


@dataclass(frozen=True, slots=True)
class AgentProject:
    """A root, its size, the agents' questions and the question an editor warms the server with."""

    name: str
    root: Path
    description: str
    files: int
    lines: int
    questions: tuple[Question, ...]
    editor_question: Question
    # The files the editors hold open while the agents work.
    editor_files: tuple[str, ...]


def canonical(answer: Any) -> str:
    """An answer as a comparable string: locations sorted, everything else as JSON."""
    if isinstance(answer, dict):
        answer = [answer]
    if isinstance(answer, list):
        answer = sorted(answer, key=lambda item: json.dumps(item, sort_keys=True))
    return json.dumps(answer, sort_keys=True)


def summary(answer: Any) -> str:
    """A short description of an answer for the report: how many locations in how many files."""
    if answer is None:
        return "null"
    items = answer if isinstance(answer, list) else [answer]
    files = {item.get("uri", item.get("targetUri")) for item in items if isinstance(item, dict)}
    return f"{len(items)} locations in {len(files)} files"


def _count(root: Path) -> tuple[int, int]:
    files = sorted(root.rglob("*.py"))
    return len(files), sum(len(p.read_text(encoding="utf-8").splitlines()) for p in files)


TORNADO_QUESTIONS = (
    # `utf8` is called from 28 of tornado's files; asked at its implementation (after three overloads).
    Question("references utf8", "textDocument/references", "tornado/escape.py", "def utf8(value: Union", "utf8"),
    # The class a request handler builds in web.py, defined in httputil.py.
    Question(
        "definition HTTPHeaders", "textDocument/definition", "tornado/web.py", "httputil.HTTPHeaders(", "HTTPHeaders"
    ),
)
TORNADO_EDITOR = Question("references IOLoop", "textDocument/references", "tornado/ioloop.py", "class IOLoop", "IOLoop")

TINY_QUESTIONS = (
    Question("references add", "textDocument/references", "demo/util.py", "def add", "add"),
    Question("definition scale", "textDocument/definition", "demo/main.py", "return scale(", "scale"),
)
TINY_EDITOR = Question("references scale", "textDocument/references", "demo/util.py", "def scale", "scale")


def tornado(work: Path) -> AgentProject:
    """tornado's pinned sdist, copied to a root of this benchmark's own."""
    sdist = PROJECTS["tornado"]
    pristine = fetch_sdist(sdist, SEARCH_OUT)
    root = work / "roots" / "tornado" / sdist.tree
    if not (root / "tornado" / "web.py").is_file():
        shutil.rmtree(root.parent, ignore_errors=True)
        shutil.copytree(pristine, root)
    files, lines = _count(root)
    return AgentProject(
        "tornado",
        root,
        sdist.description,
        files,
        lines,
        TORNADO_QUESTIONS,
        TORNADO_EDITOR,
        ("tornado/web.py", "tornado/httputil.py"),
    )


def tiny(work: Path) -> AgentProject:
    """The test suite's two-module demo project (tests/support/projects.py)."""
    root = write_py_project(work / "roots" / "tiny")
    files, lines = _count(root)
    return AgentProject(
        "tiny",
        root,
        "tests/support/projects.py PY_FILES (the demo package)",
        files,
        lines,
        TINY_QUESTIONS,
        TINY_EDITOR,
        ("demo/main.py", "demo/util.py"),
    )


PROJECT_MAKERS = {"tornado": tornado, "tiny": tiny}
