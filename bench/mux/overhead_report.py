"""Markdown tables from a `bench.mux.overhead` result, for bench/out/ and docs/benchmarks.md.

python -m bench.mux.overhead_report bench/out/mux_overhead.json     # re-render a saved run
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from bench.mux.clangd_queries import SHORT as METHOD_SHORT
from bench.report import machine_lines
from bench.report import signed_us as _signed
from bench.report import us as _us
from bench.runner import arg_parser

SHORT = {**METHOD_SHORT, "all": "all requests"}


def latency_tables(lat: dict[str, Any]) -> list[str]:
    """One table per route measured against the baseline."""
    base_name = lat["baseline"]
    base = lat["routes"][base_name]
    lines: list[str] = []
    for name, added in lat["added"].items():
        route = lat["routes"][name]
        match = lat["answers_match"][name]
        same = sum(v[0] for v in match.values())
        total = sum(v[1] for v in match.values())
        lines += [
            f"**{route['description']}** against {base['description']} "
            f"(µs; identical answers in {same} of {total} compared queries):",
            "",
            "| method | n | direct p50 | direct p99 | via lensmux p50 | via lensmux p99 "
            "| added p50 | added p99 | paired median Δ | ratio p50 | ratio p99 |",
            "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
        ]
        for method, a in added.items():
            b = base["methods"][method] if method != "all" else base["all"]
            r = route["methods"][method] if method != "all" else route["all"]
            lines.append(
                f"| {SHORT.get(method, method)} | {r['n']} | {_us(b['p50_us'])} | {_us(b['p99_us'])} "
                f"| {_us(r['p50_us'])} | {_us(r['p99_us'])} | {_signed(a['p50_us'])} | {_signed(a['p99_us'])} "
                f"| {_signed(a['paired_median_us'])} | {a['p50_ratio']:.3f} | {a['p99_ratio']:.3f} |"
            )
        lines.append("")
    return lines


def throughput_table(tp: dict[str, Any]) -> list[str]:
    """Round trips per second and what each costs, per client count."""
    lines = [
        f"Payload: {tp['params_bytes']}-byte params echoed back; median of {tp['trials']} alternating "
        f"trials of {tp['duration_s']:g} s each.",
        "",
        "| clients | direct round trips/s | lensmux round trips/s | lensmux messages/s | ratio "
        "| direct p50 / p99 µs | lensmux p50 / p99 µs | added p50 µs | daemon CPU µs per round trip |",
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for n, run in tp["runs"].items():
        d, m = run["direct"], run["lensmux"]
        lines.append(
            f"| {n} | {d['round_trips_per_s']:,.0f} | {m['round_trips_per_s']:,.0f} | {m['messages_per_s']:,.0f} "
            f"| {run['ratio']:.2f} | {_us(d['latency']['p50_us'])} / {_us(d['latency']['p99_us'])} "
            f"| {_us(m['latency']['p50_us'])} / {_us(m['latency']['p99_us'])} | {_signed(run['added_p50_us'])} "
            f"| {_us(m['cpu_us_per_round_trip']['daemon'])} |"
        )
    lines.append("")
    return lines


def render(result: dict[str, Any]) -> str:
    """The whole run as markdown."""
    lines = ["# lensmux multiplexer overhead", "", f"Command: `{result['command']}`", "", *machine_lines(result), ""]
    lat = result.get("latency")
    if lat is not None:
        lines += [
            "## clangd request latency",
            "",
            f"Corpus: {result['corpus']}; {len(lat['files'])} files open, {lat['queries_per_round']} queries "
            f"per round, {lat['warmup_rounds']} warm-up + {lat['rounds']} measured rounds.",
            "",
            *latency_tables(lat),
        ]
        cpu = lat.get("daemon_cpu_us_per_request") or {}
        if cpu:
            lines += [
                "Daemon CPU time per request over the measured rounds: "
                + "; ".join(f"{name} {value:,.0f} µs" for name, value in cpu.items())
                + ".",
                "",
            ]
    tp = result.get("throughput")
    if tp is not None:
        lines += ["## Echo throughput through the daemon", "", *throughput_table(tp)]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Print the markdown of a saved result."""
    parser = arg_parser(__doc__)
    parser.add_argument("result", type=Path, help="a JSON file written by bench.mux.overhead")
    args = parser.parse_args(argv)
    print(render(json.loads(args.result.read_text())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
