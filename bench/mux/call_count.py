"""Function calls the daemon makes per forwarded echo round trip: a count, not a timing.

    python -m bench.mux.call_count                                  # this checkout, uvloop and asyncio
    python -m bench.mux.call_count --baseline /tmp/old/pkg          # and other code (its PYTHONPATH)
    python -m bench.mux.call_count --round-trips 2000 --top 40

One client sends exactly N `textDocument/hover` requests through `echo.sock`
to the echo server, one at a time (cache off), while the daemon's main thread
counts every call under `sys.setprofile` (bench/mux/count_shim.py, switched on
and off by SIGUSR1 and SIGUSR2 while the client waits). A round trip is the
request in, the server's answer back out. Python calls, coroutine resumptions
and C calls are counted apart; the figures are the same on a busy machine and
a quiet one, so two versions of the code compare exactly. The idle line is
the same window with no traffic: what the daemon does on its own.
"""

from __future__ import annotations

import functools
import json
import os
import re
import signal
import sys
from pathlib import Path
from typing import Any

import anyio
from support.daemon_proc import DaemonProc, wait_until

from bench import CHECKOUT
from bench.daemon_launch import bench_daemon, config_text
from bench.mux import echo_throughput
from bench.runner import add_common_options, arg_parser, start_logging
from bench.stats import write_atomic

_SHIM = Path(__file__).with_name("count_shim.py")
# Long enough for the signal to be handled before the first request, and for the
# last answer's end-of-turn writes to run before counting stops.
_SETTLE_S = 0.3


async def _count_window(daemon: DaemonProc, conn: echo_throughput.EchoConnection | None, params: bytes, n: int) -> None:
    os.kill(daemon.pid, signal.SIGUSR1)
    await anyio.sleep(_SETTLE_S)
    if conn is not None:
        for _ in range(n):
            await conn.call(b"textDocument/hover", params)
    await anyio.sleep(_SETTLE_S)
    os.kill(daemon.pid, signal.SIGUSR2)


async def _drive(daemon: DaemonProc, root: Path, n: int, warmup: int, out: Path) -> dict[str, Any]:
    (root / ".git").mkdir(parents=True, exist_ok=True)
    params = echo_throughput.params_for(0, root)
    counts: dict[str, Any] = {}
    async with anyio.create_task_group() as tg:
        async with echo_throughput.daemon_echo(tg, daemon, root, 1) as conns:
            for _ in range(warmup):
                await conns[0].call(b"textDocument/hover", params)
            for label, conn in (("idle", None), ("load", conns[0])):
                out.unlink(missing_ok=True)
                await _count_window(daemon, conn, params, n)
                await anyio.to_thread.run_sync(
                    functools.partial(wait_until, out.exists, timeout=30, what="the daemon's call counts")
                )
                counts[label] = json.loads(out.read_text())
        tg.cancel_scope.cancel()
    return counts


def _where(label: str) -> str:
    # Installed packages first: the venv lives inside the checkout.
    return re.sub(
        rf"(\(|\s)(/\S*/(site-packages|lib/python3\.\d+)|{re.escape(str(CHECKOUT))}|/\S*/pkg/lensmux)/", r"\1", label
    )


def _area(label: str) -> str:
    """Which layer a counted function belongs to."""
    if "(daemon/" in label or "(adapters/" in label or "lensmux" in label.split("(", maxsplit=1)[0]:
        return "lensmux daemon code"
    if "anyio" in label:
        return "anyio"
    if "msgspec" in label:
        return "msgspec"
    if "uvloop" in label:
        return "uvloop"
    if "(asyncio/" in label or "asyncio." in label or "(selectors.py" in label or "(socket.py" in label:
        return "asyncio, selectors, socket"
    if label.endswith("(~)"):
        return "other C functions"
    return "other Python"


def report(name: str, counts: dict[str, Any], n: int, top: int) -> tuple[str, dict[str, float]]:
    """The per-round-trip table of one daemon, and its totals."""
    load = {_where(k): v for k, v in counts["load"].items()}
    idle = counts["idle"]
    totals = {
        "python_calls": sum(v[0] for v in load.values()) / n,
        "resumptions": sum(v[1] for v in load.values()) / n,
        "c_calls": sum(v[2] for v in load.values()) / n,
        "idle_calls": float(sum(sum(v) for v in idle.values())),
    }
    areas: dict[str, float] = {}
    for label, (calls, resumes, _c) in load.items():
        areas[_area(label)] = areas.get(_area(label), 0.0) + (calls + resumes) / n
    lines = [
        f"## {name}: {n} round trips, per round trip: {totals['python_calls']:.1f} Python calls, "
        f"{totals['resumptions']:.1f} coroutine resumptions, {totals['c_calls']:.1f} C calls "
        f"(idle window: {totals['idle_calls']:.0f} calls in all)",
        "",
        "Python calls + resumptions per round trip by area:",
        *(f"{v:8.2f}  {a}" for a, v in sorted(areas.items(), key=lambda kv: -kv[1])),
        "",
        f"{'calls/rt':>9} {'resumes/rt':>10} {'C/rt':>6}  function",
    ]
    ranked = sorted(load.items(), key=lambda kv: -(kv[1][0] + kv[1][1] + kv[1][2]))
    for label, (calls, resumes, c_calls) in ranked[:top]:
        lines.append(f"{calls / n:9.2f} {resumes / n:10.2f} {c_calls / n:6.2f}  {label}")
    return "\n".join(lines), totals


def count(name: str, env: dict[str, str], *, n: int, warmup: int, work: Path) -> dict[str, Any]:
    """Run one daemon under the counting shim and drive it; the raw counts."""
    out = work / name / "counts.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    wrapper = [sys.executable, str(_SHIM), str(out)]
    with bench_daemon(work / name / "daemon", config_text(cache=False, echo=True), wrapper=wrapper, extra_env=env) as d:
        return anyio.run(_drive, d, work / name / "root", n, warmup, out)


def main(argv: list[str] | None = None) -> int:
    """Count each daemon and save the report to bench/out/call-count.txt."""
    parser = arg_parser(__doc__)
    parser.add_argument("--round-trips", type=int, default=1000)
    parser.add_argument("--warmup", type=int, default=200)
    parser.add_argument("--loops", default="uvloop,asyncio", help="asyncio,uvloop")
    parser.add_argument("--baseline", type=Path, help="PYTHONPATH of other lensmux code, counted on the same loops")
    parser.add_argument("--top", type=int, default=30)
    add_common_options(parser)
    args = parser.parse_args(argv)
    start_logging(args.verbose)
    work = args.out.resolve() / "work" / "call-count"
    daemons: dict[str, dict[str, str]] = {}
    for loop in args.loops.split(","):
        daemons[f"lensmux-{loop}"] = {"LENSMUX_EVENT_LOOP": loop}
        if args.baseline:
            daemons[f"before-{loop}"] = {"PYTHONPATH": str(args.baseline.resolve()), "LENSMUX_EVENT_LOOP": loop}
    sections, summary = [], []
    for name, env in daemons.items():
        text, totals = report(
            name, count(name, env, n=args.round_trips, warmup=args.warmup, work=work), args.round_trips, args.top
        )
        sections.append(text)
        summary.append(
            f"| {name} | {totals['python_calls']:.1f} | {totals['resumptions']:.1f} | {totals['c_calls']:.1f} | "
            f"{totals['python_calls'] + totals['resumptions']:.1f} |"
        )
    head = [
        "| daemon | Python calls per round trip | coroutine resumptions | C calls | calls + resumptions |",
        "| --- | ---: | ---: | ---: | ---: |",
        *summary,
    ]
    text = "\n".join(head) + "\n\n" + "\n\n".join(sections) + "\n"
    write_atomic(args.out / "call-count.txt", text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
