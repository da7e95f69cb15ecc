"""`lensmux search` for people: ranked hits with a few source lines, colour only on a terminal."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, TextIO

from lensmux.graph.search.answer.reasons import describe_reasons

SNIPPET_LINES = 3


def use_colour(stream: TextIO) -> bool:
    """Colour when writing to a terminal and NO_COLOR is not set."""
    return stream.isatty() and not os.environ.get("NO_COLOR") and os.environ.get("TERM") != "dumb"


def _paint(code: str, text: str, colour: bool) -> str:
    return f"\033[{code}m{text}\033[0m" if colour else text


def _snippet(path: Path, line: int, end_line: int) -> list[str]:
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return []
    last = min(end_line, line + SNIPPET_LINES - 1, len(lines))
    shown = lines[line - 1 : last]
    while shown and not shown[-1].strip():
        shown.pop()
    return shown


def render_results(result: dict[str, Any], colour: bool) -> str:
    """Rank, path:line, symbol and kind, a few source lines, and the main reason of each hit."""
    root = Path(str(result.get("root") or "."))
    symbols = result.get("ranked_symbols") or []
    if not symbols:
        return f"no results in {root}"
    out: list[str] = []
    width = len(str(len(symbols)))
    for rank, sym in enumerate(symbols, 1):
        path = Path(sym["file_path"])
        full = path if path.is_absolute() else root / path
        try:
            shown = full.relative_to(root).as_posix()
        except ValueError:
            shown = str(full)
        rng = sym.get("range") or {}
        line = int((rng.get("start") or {}).get("line", 0)) + 1
        end_line = int((rng.get("end") or {}).get("line", line - 1)) + 1
        head = (
            f"{rank:>{width}}. {_paint('1;36', f'{shown}:{line}', colour)}  "
            f"{_paint('1', str(sym.get('name', '')), colour)} {_paint('2', str(sym.get('kind', '')), colour)}"
        )
        out.append(head)
        pad = " " * (width + 2)
        for text in _snippet(full, line, end_line):
            out.append(f"{pad}{_paint('2', '│', colour)} {text.rstrip()[:160]}")
        reasons = [str(r) for r in sym.get("reasons") or []]
        if reasons:
            out.append(f"{pad}{_paint('33', 'why: ' + describe_reasons(reasons), colour)}")
        out.append("")
    shared = result.get("shared")
    if isinstance(shared, dict):
        commit = str(shared.get("commit", ""))[:12]
        out.append(_paint("2", f"unchanged files answered from the team's index of commit {commit}", colour))
    for warning in result.get("warnings") or []:
        out.append(_paint("33", f"warning: {warning}", colour))
    return "\n".join(out).rstrip()
