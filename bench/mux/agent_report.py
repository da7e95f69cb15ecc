"""The markdown section of an agent-sessions run (bench.mux.agent_sessions) for docs/benchmarks.md.

.venv/bin/python -m bench.mux.agent_report bench/out/agent_sessions.json   # re-render a saved run
"""

from __future__ import annotations

import json
import statistics
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from bench.report import machine_lines

READY_GOAL_S = 1.0
SPEEDUP_GOAL = 10.0
MEMORY_GOAL = 1.3


def _values(sessions: Iterable[dict[str, Any]], *path: str) -> list[float]:
    out: list[float] = []
    for session in sessions:
        value: Any = session
        for key in path:
            value = value.get(key) if isinstance(value, dict) else None
        if isinstance(value, int | float):
            out.append(float(value))
    return out


def _spread(values: list[float], count: int) -> str:
    """Median and max, and how many of `count` never got there."""
    if not values:
        return f"none of {count}"
    text = f"{statistics.median(values):.2f}" if len(values) == 1 else (
        f"{statistics.median(values):.2f} / {max(values):.2f}"
    )  # fmt: skip
    missing = count - len(values)
    return text + (f" ({missing} of {count} never)" if missing else "")


def _asks(sessions: list[dict[str, Any]]) -> tuple[int, int, int, int]:
    """All asks, those not complete, those complete but in another order, and errors."""
    total = incomplete = reordered = errors = 0
    for session in sessions:
        for question in session.get("questions", {}).values():
            for ask in question["asks"]:
                total += 1
                if "error" in ask:
                    errors += 1
                elif not ask["complete"]:
                    incomplete += 1
                elif not ask["identical"]:
                    reordered += 1
    return total, incomplete, reordered, errors


def _first_label(project: dict[str, Any]) -> str:
    return str(project["project"]["questions"][0]["label"])


# Where a run's memory figures are, by measure: (peaks, marks).
_MEASURES = {"RSS": ("peak_mib", "marks_mib"), "PSS": ("pss_peak_mib", "pss_marks_mib")}


def _memory(run: dict[str, Any], measure: str = "RSS") -> tuple[float, float]:
    """The servers' memory (own pyrights, or the daemon with its pyright) at the peak and once all had answered."""
    peaks, marks = _MEASURES[measure]
    memory = run["memory"]
    group = "servers" if "servers" in memory["peak_mib"] else "daemon"
    return memory.get(peaks, {}).get(group, 0.0), memory.get(marks, {}).get("answered", {}).get(group, 0.0)


def _bridges(run: dict[str, Any], measure: str = "RSS") -> float | None:
    """The bridges' memory once all had answered (None for a run without bridges)."""
    _, marks = _MEASURES[measure]
    value = run["memory"].get(marks, {}).get("answered", {}).get("bridges")
    return None if value is None else float(value)


def _runs_table(project: dict[str, Any]) -> list[str]:
    labels = [q["label"] for q in project["project"]["questions"]]
    head = "| run | agents | spawn → ready s | " + " | ".join(f"spawn → complete *{label}* s" for label in labels)
    lines = [
        head + " | asks: all / not complete / other order / errors | servers' RSS MiB peak / all answered "
        "| bridges' RSS MiB at all answered | servers' PSS MiB peak / all answered "
        "| bridges' PSS MiB at all answered |",
        "| --- | ---: | ---: | " + " | ".join("---:" for _ in labels) + " | ---: | ---: | ---: | ---: | ---: |",
    ]
    for name, run in project["runs"].items():
        sessions = run["sessions"]
        count = len(sessions)
        cells = [_spread(_values(sessions, "ready_s"), count)]
        cells += [_spread(_values(sessions, "questions", label, "complete_s"), count) for label in labels]
        total, incomplete, reordered, errors = _asks(sessions)
        memory = []
        for measure in _MEASURES:
            peak, answered = _memory(run, measure)
            bridges = _bridges(run, measure)
            memory += [
                f"{peak:,.0f} / {answered:,.0f}" if answered else "",
                "" if bridges is None else f"{bridges:,.0f}",
            ]
        lines.append(
            f"| {name} | {count} | "
            + " | ".join(cells)
            + f" | {total} / {incomplete} / {reordered} / {errors} | "
            + " | ".join(memory)
            + " |"
        )
    return lines


def _median(run: dict[str, Any] | None, *path: str) -> float | None:
    """The median over a run's sessions, if every session got there."""
    if run is None:
        return None
    values = _values(run["sessions"], *path)
    return statistics.median(values) if values and len(values) == len(run["sessions"]) else None


def _verdict(met: bool) -> str:
    return "met" if met else "not met"


def _ready_goal(name: str, n: str, shared: dict[str, Any]) -> list[str]:
    ready = _values(shared["sessions"], "ready_s")
    if not ready:
        return [f"- {name}, N = {n}: no agent heard a ready signal (goal ≤ {READY_GOAL_S:g} s): not met"]
    met = max(ready) <= READY_GOAL_S and len(ready) == len(shared["sessions"])
    return [f"- {name}, N = {n}: ready signal on the warm instance, at most {max(ready):.2f} s "
            f"(goal ≤ {READY_GOAL_S:g} s): {_verdict(met)}"]  # fmt: skip


def _speed_goal(name: str, n: str, label: str, shared: dict[str, Any], own: dict[str, Any] | None) -> list[str]:
    s_done = _median(shared, "questions", label, "complete_s")
    o_done = _median(own, "questions", label, "complete_s")
    if s_done is None or o_done is None:
        return []
    ratio = o_done / s_done if s_done else float("inf")
    tiny = name == "tiny"
    goal = "never slower" if tiny else f"≥ {SPEEDUP_GOAL:g}x"
    met = s_done <= o_done if tiny else ratio >= SPEEDUP_GOAL
    return [f"- {name}, N = {n}: first complete *{label}*, median {s_done:.2f} s shared against {o_done:.2f} s "
            f"own: {ratio:.1f}x sooner (goal {goal}): {_verdict(met)}"]  # fmt: skip


def _answers_goal(name: str, n: str, shared: dict[str, Any]) -> list[str]:
    total, incomplete, reordered, errors = _asks(shared["sessions"])
    same = total - incomplete - reordered - errors
    return [f"- {name}, N = {n}: shared answers identical to a server of its own: {same} of {total} "
            f"({_verdict(bool(total) and same == total)})"]  # fmt: skip


def _editor_memory(editor_own: dict[str, Any] | None, measure: str = "RSS") -> tuple[float, float]:
    """One editor's own pyright at its peak and once quiet (0 when the run has no such baseline)."""
    if not editor_own:
        return 0.0, 0.0
    peaks, marks = _MEASURES[measure]
    memory = editor_own["memory"]
    return memory.get(peaks, {}).get("servers", 0.0), memory.get(marks, {}).get("warm", {}).get("servers", 0.0)


def _one_agent(runs: dict[str, Any], n: str, measure: str = "RSS") -> tuple[float, float, str] | None:
    """One agent's own pyright (peak, all answered, what it is): the run of one, else the mean of the N own."""
    if "own-1" in runs:
        return (*_memory(runs["own-1"], measure), "one AGENT's own pyright (its two questions, no file kept open)")
    if f"own-{n}" in runs:
        peak, end = _memory(runs[f"own-{n}"], measure)
        what = f"one AGENT's own pyright (its two questions, no file kept open; the mean of the {n} agents' own)"
        return peak / int(n), end / int(n), what
    return None


def _memory_goal(
    name: str, key: str, shared: dict[str, Any], runs: dict[str, Any], editor_own: dict[str, Any] | None
) -> list[str]:
    return _rss_goal(name, key, shared, runs, editor_own) + _pss_goal(name, key, shared, runs, editor_own)


def _rss_goal(
    name: str, key: str, shared: dict[str, Any], runs: dict[str, Any], editor_own: dict[str, Any] | None
) -> list[str]:
    """The goal on VmRSS summed over the process trees, in the words of the runs before Pss was read."""
    n, editors = key.split("-")[1], len(shared.get("editors", []))
    agent = _one_agent(runs, n)
    s_peak, s_end = _memory(shared)
    if agent is None or not agent[1]:
        return []
    o_peak, o_end, agent_what = agent
    bridges = _bridges(shared) or 0.0
    ratio = s_end / o_end
    daemon = shared.get("daemon_process_mib_at_answered", {}).get("VmRSS", 0.0)
    lines = [
        f"- {name}: {n} agents + {editors} editors on one pyright: the daemon with its pyright held {s_end:,.0f} MiB "
        f"once all had answered; against {agent_what} {o_end:,.0f} MiB: {ratio:.2f}x "
        f"(goal ≤ {MEMORY_GOAL:g}x): {_verdict(ratio <= MEMORY_GOAL)}; of which "
        f"the daemon's own process {daemon:,.0f} MiB and the shared pyright {s_end - daemon:,.0f} MiB "
        f"({(s_end - daemon) / o_end:.2f}x); with the {n} `lensmux client` bridges {(s_end + bridges) / o_end:.2f}x; "
        f"peaks {s_peak:,.0f} against {o_peak:,.0f} MiB"
    ]
    e_peak, e_end = _editor_memory(editor_own)
    if e_end and editor_own is not None:
        e_ratio = s_end / e_end
        files = ", ".join(editor_own.get("files", []))
        lines.append(
            f"- {name}: the same {s_end:,.0f} MiB against one EDITOR's own pyright doing what the {editors} editors "
            f"do ({files} open, *{editor_own.get('warm_question', '?')}* asked), {e_end:,.0f} MiB once quiet: "
            f"{e_ratio:.2f}x (goal ≤ {MEMORY_GOAL:g}x): {_verdict(e_ratio <= MEMORY_GOAL)}; the shared pyright alone "
            f"{(s_end - daemon) / e_end:.2f}x; with the bridges {(s_end + bridges) / e_end:.2f}x; peaks "
            f"{s_peak:,.0f} against {e_peak:,.0f} MiB"
        )
    return lines


def _pss_goal(
    name: str, key: str, shared: dict[str, Any], runs: dict[str, Any], editor_own: dict[str, Any] | None
) -> list[str]:
    """The goal on Pss summed over the same trees: pages shared between processes counted once."""
    n = key.split("-")[1]
    agent = _one_agent(runs, n, "PSS")
    _, s_end = _memory(shared, "PSS")
    if agent is None or not agent[1] or not s_end:
        return []
    _, o_end, _ = agent
    _, e_end = _editor_memory(editor_own, "PSS")
    bridges = _bridges(shared, "PSS") or 0.0
    daemon = shared.get("daemon_process_mib_at_answered", {}).get("Pss", 0.0)
    against = [(f"one AGENT's own {o_end:,.0f} MiB", o_end)] + (
        [(f"one EDITOR's own {e_end:,.0f} MiB", e_end)] * bool(e_end)
    )
    return [
        f"- {name}, PSS: the daemon with its pyright {s_end:,.0f} MiB (its own process {daemon:,.0f}, the shared "
        f"pyright {s_end - daemon:,.0f}), the {n} bridges {bridges:,.0f} MiB; "
        + "; ".join(
            f"against {what}: {s_end / base:.2f}x (goal ≤ {MEMORY_GOAL:g}x): {_verdict(s_end / base <= MEMORY_GOAL)}, "
            f"with the bridges {(s_end + bridges) / base:.2f}x"
            for what, base in against
        )
    ]


def _goals(name: str, project: dict[str, Any]) -> list[str]:
    runs = project["runs"]
    label = _first_label(project)
    lines: list[str] = []
    for key in sorted((k for k in runs if k.startswith("shared-")), key=lambda k: int(k.split("-")[1])):
        n = key.split("-")[1]
        lines += _ready_goal(name, n, runs[key])
        lines += _speed_goal(name, n, label, runs[key], runs.get(f"own-{n}"))
        lines += _answers_goal(name, n, runs[key])
        if n != "1":
            lines += _memory_goal(name, key, runs[key], runs, project.get("editor_own"))
    return lines


def _differences(project: dict[str, Any]) -> list[str]:
    """Every shared answer that was not the reference's, one line each."""
    lines: list[str] = []
    for name, run in project["runs"].items():
        if not name.startswith("shared-"):
            continue
        for session in run["sessions"]:
            for label, question in session.get("questions", {}).items():
                for ask in question["asks"]:
                    if "error" in ask or not ask["complete"] or not ask["identical"]:
                        what = ask.get("error") or f"{ask['answer']}, complete {ask['complete']}"
                        lines.append(f"- {name} {session['name']} *{label}* at {ask['at_s']:.2f} s: {what}")
    return lines


def _warm_label(result: dict[str, Any], project: dict[str, Any]) -> str:
    if result["settings"].get("warm_with") == "same":
        return f"{project['questions'][0]['label']}, the agents' own first question"
    return str(project["editor_question"])


def _editor_line(editor_own: dict[str, Any] | None) -> list[str]:
    """The editors' baseline: one editor with a pyright of its own doing every editor's part."""
    peak, quiet = _editor_memory(editor_own)
    if editor_own is None or not quiet:
        return []
    warm = editor_own.get("warm", {}).get("complete_s")
    return [
        f"One editor with a pyright of its own ({', '.join(editor_own['files'])} open, "
        f"*{editor_own.get('warm_question', '?')}* complete at "
        f"{'never' if warm is None else f'{warm:.2f} s'}): {quiet:,.0f} MiB once quiet, peak {peak:,.0f} MiB."
    ]


def render(result: dict[str, Any]) -> str:
    """The section: command, machine, projects, then per project the runs table and the goals."""
    out = ["### Agent sessions: a warm shared pyright against a pyright of their own", "", f"`{result['command']}`", ""]
    out += machine_lines(result)
    s = result["settings"]
    out += [f"- settings: agents {s['agents']}, editors on the shared instance {s['editors']}, "
            f"warm after {s.get('quiet_s', 0):g} s without a message to the editors, "
            f"deadline {s['deadline_s']:g} s, memory sampled every {s['memory_interval_s']:g} s", ""]  # fmt: skip
    for name, project in result["projects"].items():
        p, ref = project["project"], project["reference"]
        out += [
            f"#### {name}: {p['py_files']} Python files, {p['py_lines']:,} lines ({p['description']})",
            "",
            f"Reference (a pyright of its own): ready signal `{ref['ready_signal']}` at {ref['ready_s']:.2f} s, "
            "settled answers "
            + "; ".join(f"*{label}* {a['answer']} ({a['asks']} asks)" for label, a in ref["asks"].items())
            + f", at {ref['settled_s']:.1f} s, holding {ref.get('rss_mib_settled', 0):,.0f} MiB then"
            + (f" (PSS {ref['pss_mib_settled']:,.0f})" if ref.get("pss_mib_settled") else "")
            + ". "
            f"The first editor warms the shared instance with *{_warm_label(result, p)}*.",
            *_editor_line(project.get("editor_own")),
            "",
            "Times are seconds from spawning the client process, median / max over the sessions.",
            "",
            *_runs_table(project),
            "",
            *_goals(name, project),
        ]
        differences = _differences(project)
        if differences:
            out += ["", "Shared answers that were not the reference's:", *differences]
        out.append("")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    """Print the section of a saved run."""
    args = sys.argv[1:] if argv is None else argv
    path = Path(args[0]) if args else Path("bench/out/agent_sessions.json")
    print(render(json.loads(path.read_text())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
