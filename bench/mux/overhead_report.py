"""Markdown tables from a `mux_overhead` result, for bench/out/ and docs/benchmarks.md.

python -m bench.report bench/out/mux_overhead.json     # re-render a saved run
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

SHORT = {
    "textDocument/documentSymbol": "documentSymbol",
    "textDocument/definition": "definition",
    "textDocument/references": "references",
    "textDocument/hover": "hover",
    "all": "all requests",
}


def _us(value: float) -> str:
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:,.1f}"


def _signed(value: float) -> str:
    return ("+" if value >= 0 else "-") + _us(abs(value))


def machine_lines(result: dict[str, Any]) -> list[str]:
    """The machine and software the figures were measured on."""
    m = result["machine"]
    return [
        f"- CPU: {m['cpu']}, `nproc` = {m['nproc']}; RAM {m['ram_gib']} GiB; Linux {m['kernel']}",
        f"- Python {m['python']}; {m.get('clangd', 'clangd not used')}",
        f"- load average (1, 5, 15 min) at the start: {', '.join(str(x) for x in m['load_avg_at_start'])}; "
        f"at the end: {', '.join(str(x) for x in m.get('load_avg_at_end', []))}",
        f"- run started {result['started']}, took {result['elapsed_s']:.0f} s",
        _code_line(result.get("code")),
    ]


def _code_line(code: dict[str, Any] | None) -> str:
    if not code:
        return "- daemon code: not recorded"
    dirty = f", with uncommitted changes to {len(code['uncommitted'])} files" if code["uncommitted"] else ""
    return f"- daemon code: commit {code['commit']}{dirty} (sources sha256 {code['sources_sha256']})"


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
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("result", type=Path, help="a JSON file written by bench.mux_overhead")
    args = parser.parse_args(argv)
    print(render(json.loads(args.result.read_text())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
