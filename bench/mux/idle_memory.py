"""What the daemon and the stdio bridge hold in memory when they only multiplex (no index, no search).

    python -m bench.mux.idle_memory                              # this checkout's daemon and bridge
    python -m bench.mux.idle_memory --baseline /tmp/old/pkg      # and those of other code, in the same run

Each round starts one daemon per code (`lensmux`, this checkout; `before`, or
--baseline-name, the --baseline PYTHONPATH) with the embedded servers and the HTTP API off, side by side. After
`--settle` seconds with no client, each daemon's resident memory is read (*idle*). Then
an editor connects to each through `lensmux client pyright` of the same code (the
process an editor or an agent spawns), initializes a small Python project, opens a
document and waits for a hover; after `--settle` seconds the daemon's own memory, the
bridge's and pyright's (the daemon's descendants) are read. VmRSS and VmHWM come from
/proc/PID/status; *mapped* names the notable native libraries in /proc/PID/maps (the
search stack's numpy, hnswlib and onnxruntime, and the event loop's uvloop and ssl).
Figures are medians over rounds; which code starts first alternates.
"""

from __future__ import annotations

import contextlib
import statistics
import sys
from pathlib import Path
from typing import Any

import anyio
from support.daemon_proc import DaemonProc, descendants
from support.lspclient import LspClient
from support.projects import write_py_project

from bench.daemon_launch import bench_daemon, config_text
from bench.runner import add_common_options, arg_parser, result_header, save_result, start_logging
from bench.stats import load_average, memory_kib

# Native libraries whose presence says what a process loaded: the search stack, the event loop.
_NOTABLE = ("numpy", "hnswlib", "onnxruntime", "uvloop", "_ssl", "libssl")
_FIGURES = ("daemon_idle", "daemon_attached", "daemon_hwm", "bridge", "bridge_hwm", "pyright")


def _mib(kib: int) -> float:
    return round(kib / 1024, 1)


def mapped(pid: int) -> list[str]:
    """Which of the notable native libraries `pid` has mapped."""
    try:
        maps = Path(f"/proc/{pid}/maps").read_text()
    except OSError:
        return []
    return [name for name in _NOTABLE if f"/{name}" in maps or f"{name}." in maps]


async def _attach(daemon: DaemonProc, env: dict[str, str], project: Path, stack: contextlib.AsyncExitStack) -> int:
    """An editor on pyright through `lensmux client`, a document open and one hover answered; the bridge's pid."""
    client = await stack.enter_async_context(
        LspClient.over_process(daemon.client_argv("pyright"), env={**daemon.env, **env}, name="editor")
    )
    await client.initialize(project)
    uri = await client.open(project / "demo/main.py", "python")
    position = {"textDocument": {"uri": uri}, "position": {"line": 4, "character": 10}}
    await client.request("textDocument/hover", position, timeout=120)
    assert client.pid is not None
    return client.pid


async def _round(
    daemons: dict[str, DaemonProc], envs: dict[str, dict[str, str]], work: Path, settle: float
) -> dict[str, Any]:
    await anyio.sleep(settle)
    out: dict[str, dict[str, Any]] = {
        name: {"daemon_idle": memory_kib(d.pid), "daemon_idle_mapped": mapped(d.pid)} for name, d in daemons.items()
    }
    async with contextlib.AsyncExitStack() as stack:
        bridges = {
            name: await _attach(d, envs[name], write_py_project(work / f"project-{name}"), stack)
            for name, d in daemons.items()
        }
        await anyio.sleep(settle)
        for name, daemon in daemons.items():
            row = out[name]
            row["daemon_attached"] = memory_kib(daemon.pid)
            row["daemon_hwm"] = memory_kib(daemon.pid, "VmHWM")
            row["daemon_mapped"] = mapped(daemon.pid)
            row["bridge"] = memory_kib(bridges[name])
            row["bridge_hwm"] = memory_kib(bridges[name], "VmHWM")
            row["bridge_mapped"] = mapped(bridges[name])
            row["pyright"] = sum(memory_kib(pid) for pid in descendants(daemon.pid))
    return out


def _summary(rounds: list[dict[str, Any]]) -> dict[str, Any]:
    """Median MiB of each figure per code, and what the last round found mapped."""
    codes = rounds[0].keys()
    return {
        code: {
            **{f"{fig}_mib": _mib(int(statistics.median(r[code][fig] for r in rounds))) for fig in _FIGURES},
            **{key: rounds[-1][code][key] for key in ("daemon_idle_mapped", "daemon_mapped", "bridge_mapped")},
        }
        for code in codes
    }


def render(result: dict[str, Any]) -> str:
    """One row per code, MiB."""
    lines = [
        "| code | daemon idle | daemon, one pyright client | daemon peak (VmHWM) | bridge | bridge peak "
        "| pyright | native libraries mapped (daemon idle / attached / bridge) |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for code, row in result["summary"].items():
        libs = " / ".join(", ".join(row[k]) or "-" for k in ("daemon_idle_mapped", "daemon_mapped", "bridge_mapped"))
        lines.append(
            f"| {code} | {row['daemon_idle_mib']:.1f} | {row['daemon_attached_mib']:.1f} | {row['daemon_hwm_mib']:.1f} "
            f"| {row['bridge_mib']:.1f} | {row['bridge_hwm_mib']:.1f} | {row['pyright_mib']:.1f} | {libs} |"
        )
    machine = result["machine"]
    loads = (machine.get("load_avg_at_start", []), machine.get("load_avg_at_end", []))
    start, end = (", ".join(f"{x:.2f}" for x in load) for load in loads)
    return (
        "\n".join(lines)
        + f"\n\n`{result['command']}`: median of {len(result['rounds'])} rounds, MiB (VmRSS unless said);"
        + f" load average {start} at the start, {end} at the end\n"
    )


def main(argv: list[str] | None = None) -> int:
    """Measure and save."""
    parser = arg_parser(__doc__)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--settle", type=float, default=5.0, help="seconds before each reading")
    parser.add_argument("--baseline", type=Path, help="PYTHONPATH of other lensmux code, measured alongside")
    parser.add_argument("--baseline-name", default="before", help="its name in the table (default `before`)")
    add_common_options(parser)
    args = parser.parse_args(argv)
    start_logging(args.verbose)
    work = args.out.resolve() / "work" / "idle_memory"
    work.mkdir(parents=True, exist_ok=True)
    result = result_header("bench.mux.idle_memory", pyright=True)
    envs: dict[str, dict[str, str]] = {"lensmux": {}}
    if args.baseline:
        envs[args.baseline_name] = {"PYTHONPATH": str(args.baseline.resolve())}
    result["rounds"] = []
    for i in range(args.rounds):
        order = list(envs) if i % 2 == 0 else list(reversed(envs))
        with contextlib.ExitStack() as stack:
            daemons = {
                name: stack.enter_context(bench_daemon(work / f"r{i}-{name}", config_text(), extra_env=envs[name]))
                for name in order
            }
            result["rounds"].append(anyio.run(_round, daemons, envs, work / f"r{i}", args.settle))
    result["summary"] = _summary(result["rounds"])
    result["machine"]["load_avg_at_end"] = load_average()
    report = render(result)
    save_result(args.out, "idle_memory", result, report)
    print(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
