"""Markdown for the "Resilience: load and cache" section of docs/benchmarks.md, from a `bench.mux.load` result.

.venv/bin/python -m bench.mux.load_report bench/out/bench_load.json   # re-render a saved run
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from bench.mux.clangd_queries import DEFINITION, HOVER, REFERENCES, SHORT, SYMBOLS
from bench.report import machine_lines, ms, us
from bench.runner import arg_parser

ROUTES = {
    "direct": "stdio straight to the server (baseline)",
    "socket": "lensmux socket",
    "bridge": "`lensmux client` bridge",
}


def _route_label(p: dict[str, Any]) -> str:
    label = ROUTES[p["route"]]
    return f"{label}, cache off" if p.get("daemon") == "nocache" else label


def _zeros(acc: dict[str, int]) -> str:
    return f"{acc['lost']} / {acc['duplicated']} / {acc['misrouted']}"


def _cpu_per_request_us(p: dict[str, Any]) -> str:
    daemon = p["cpu_s"].get("daemon")
    return f"{1e6 * daemon / p['answered']:,.0f}" if daemon is not None and p["answered"] else "-"


def _problems(name: str, p: dict[str, Any]) -> list[str]:
    acc = p["accounting"]
    if not (p["errors"] or acc["unexpected"] or p["timeouts"] or p["connection_failures"]):
        return []
    return [
        f"- {name}: error answers {p['errors'] or 'none'}; answers matching neither their own question's "
        f"reference nor another's: {acc['unexpected']}; timeouts {p['timeouts']}; "
        f"connections lost {p['connection_failures']}."
    ]


def echo_lines(echo: dict[str, Any]) -> list[str]:
    """The echo load table."""
    lines = [
        f"**Fast echo server** (`tests/fakes/echo_lsp_server.py`): each client sends {echo['requests_per_client']:,} "
        f"requests (hover, definition, references, documentSymbol in turn) keeping {echo['inflight_per_client']} "
        f"in flight; every request's params are unique to its (client, seq) except a {echo['hot_fraction']:.0%} "
        f"share that ask one of {echo['hot_keys']} shared questions per method (so the cache and the coalescing "
        "of identical requests work under the same load). All clients are tasks of one Python process on the "
        "same 2 cores as the daemon and the server: the CPU column shows who used them, and the daemon's CPU "
        "per request is the figure least bent by the load generator and by other work on the machine.",
        "",
        "| route | clients | requests | throughput req/s | vs baseline | p50 ms | p99 ms | cache hit rate "
        "| daemon CPU µs/request | peak daemon RSS MiB | CPU s: generator / daemon / server | lost / dup / misrouted |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    phases = echo["phases"]
    notes: list[str] = []
    for key, p in phases.items():
        base = phases.get(f"direct-{p['clients']}")
        ratio = f"{p['throughput_per_s'] / base['throughput_per_s']:.2f}" if base else "-"
        cache = f"{p['cache']['hit_rate']:.1%}" if "cache" in p else "-"
        rss = f"{p['memory']['peak_rss_mib']:.0f}" if "memory" in p else "-"
        cpu = p["cpu_s"]
        daemon = f"{cpu['daemon']:.1f}" if "daemon" in cpu else "-"
        lines.append(
            f"| {_route_label(p)} | {p['clients']} | {p['accounting']['requests']:,} | "
            f"{p['throughput_per_s']:,.0f} | {ratio} | {ms(p['latency']['p50_us'])} | {ms(p['latency']['p99_us'])} "
            f"| {cache} | {_cpu_per_request_us(p)} | {rss} "
            f"| {cpu['load generator']:.1f} / {daemon} / {cpu.get('echo server', float('nan')):.1f} "
            f"| {_zeros(p['accounting'])} |"
        )
        notes += _problems(key, p)
    socket, bridge = phases.get(f"socket-{echo['bridge_clients']}"), phases.get(f"bridge-{echo['bridge_clients']}")
    lines.append("")
    if socket and bridge:
        notes.append(
            f"- {echo['bridge_clients']} clients through bridges vs the same number on the socket: throughput "
            f"{bridge['throughput_per_s'] / socket['throughput_per_s']:.2f}x, p50 "
            f"{bridge['latency']['p50_us'] / socket['latency']['p50_us']:.2f}x."
        )
    mem = echo.get("daemon_memory_mib", {})
    peaks = ", ".join(
        f"{'cache on' if k == 'cache' else 'cache off'} {v.get('VmHWM', '?')} MiB" for k, v in mem.items()
    )
    notes.append(f"- lifetime peak RSS (VmHWM) of the echo daemons at the end: {peaks}.")
    return [*lines, *notes, ""]


METHOD_ORDER = (HOVER, DEFINITION, REFERENCES, SYMBOLS)


def clangd_lines(c: dict[str, Any]) -> list[str]:
    """The clangd load tables and the cache figure."""
    weights = ", ".join(f"{SHORT[m]} {w:.0%}" for m, w in c["weights"].items())
    queries = ", ".join(f"{n} {SHORT[m]}" for m, n in c["queries"].items())
    lines = [
        f"**Real clangd**, corpus {c['corpus']}; files {', '.join(f'`{f}`' for f in c['files'])}. "
        f"{c['clients']} clients each open two of the files and send {c['requests_per_client']} requests "
        f"({c['inflight_per_client']} in flight), drawn with weights {weights} from {queries} questions at "
        f"the names of the files' symbols (from documentSymbol); {c['editing_clients']} of them also edit "
        f"their own file every {c['edit_every']} requests (an appended comment line: the text changes, cached "
        "answers go stale and clangd rebuilds the file, but no symbol moves). Every answer is compared with "
        "the answer to its question from one client alone before the load. The same load runs against a "
        "daemon with `[daemon.cache] enabled = false` (baseline) and one with the cache.",
        "",
        "| daemon | requests | edits | throughput req/s | vs baseline | p50 ms | p99 ms | cache hit rate "
        "| daemon CPU µs/request | peak daemon RSS MiB | CPU s: generator / daemon / clangd | lost / dup / misrouted |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    phases = c["phases"]
    base = phases["nocache"]
    notes: list[str] = []
    for name, p in phases.items():
        cpu = p["cpu_s"]
        lines.append(
            f"| {'cache on' if name == 'cache' else 'cache off (baseline)'} | {p['accounting']['requests']:,} "
            f"| {p['edits']} | {p['throughput_per_s']:,.1f} | {p['throughput_per_s'] / base['throughput_per_s']:.2f} "
            f"| {ms(p['latency']['p50_us'])} | {ms(p['latency']['p99_us'])} | {p['cache']['hit_rate']:.1%} "
            f"| {_cpu_per_request_us(p)} | {p['memory']['peak_rss_mib']:.0f} "
            f"| {cpu['load generator']:.1f} / {cpu.get('daemon', 0.0):.1f} / {cpu.get('clangd', float('nan')):.1f} "
            f"| {_zeros(p['accounting'])} |"
        )
        notes += _problems(name, p)
    lines += [
        "",
        "| method | cache off p50 ms | cache off p99 ms | cache on p50 ms | cache on p99 ms | hit rate (cache on) |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    hits = phases["cache"]["cache"]["methods"]
    for m in METHOD_ORDER:
        off, on = base["methods"].get(m), phases["cache"]["methods"].get(m)
        if off is None or on is None:
            continue
        rate = f"{hits[m]['hit_rate']:.1%}" if m in hits else "-"
        lines.append(
            f"| {SHORT[m]} | {ms(off['p50_us'])} | {ms(off['p99_us'])} | {ms(on['p50_us'])} "
            f"| {ms(on['p99_us'])} | {rate} |"
        )
    lines += ["", *notes, ""] if notes else [""]
    f = c["cache_figure"]
    lines += [
        f"**Cache figure**: {len(f['queries'])} references requests at function names, {f['reps']} timed "
        "repetitions each, alternating between the daemon with the cache (every repetition a hit: "
        f"{'confirmed' if f['all_cached_were_hits'] else 'NOT confirmed'} by its hit counters) and the one "
        "without (every repetition answered by clangd), one client each, nothing else running on them.",
        "",
        "| references request | n | min µs | p50 µs | p90 µs | p99 µs |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for label in ("cached", "uncached"):
        s = f[label]
        lines.append(
            f"| {label} | {s['n']} | {us(s['min_us'])} | {us(s['p50_us'])} | {us(s['p90_us'])} | {us(s['p99_us'])} |"
        )
    lines += [
        "",
        f"Uncached / cached: **{f['p50_ratio_uncached_over_cached']}x at p50**, "
        f"{f['p99_ratio_uncached_over_cached']}x at p99.",
        "",
    ]
    return lines


def render(result: dict[str, Any]) -> str:
    """The section as markdown."""
    lines = [
        "## Resilience: load and cache",
        "",
        f"Command: `{result['command']}`",
        "",
        *machine_lines(result),
        "",
    ]
    if "echo" in result:
        lines += echo_lines(result["echo"])
    if "clangd" in result:
        lines += clangd_lines(result["clangd"])
    return "\n".join(lines).rstrip() + "\n"


def main(argv: list[str] | None = None) -> int:
    """Print the markdown of a saved result."""
    parser = arg_parser(__doc__)
    parser.add_argument("result", type=Path, help="a JSON file written by bench.mux.load")
    args = parser.parse_args(argv)
    print(render(json.loads(args.result.read_text())), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
