"""Markdown pieces every benchmark report shares: number formats and the machine and code lines."""

from __future__ import annotations

from typing import Any


def us(value: float) -> str:
    """Microseconds: whole above 100, one decimal below."""
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:,.1f}"


def signed_us(value: float) -> str:
    """Microseconds with an explicit sign (an added cost can be negative)."""
    return ("+" if value >= 0 else "-") + us(abs(value))


def ms(value_us: float) -> str:
    """Microseconds shown as milliseconds with two decimals."""
    return f"{value_us / 1000:,.2f}"


def _servers(m: dict[str, Any]) -> str:
    servers = [m[name] for name in ("clangd", "pyright") if name in m]
    return "; ".join(servers) if servers else "no language server"


def code_line(code: dict[str, Any] | None) -> str:
    """Which lensmux code was measured (stats.code_state)."""
    if not code:
        return "- lensmux code: not recorded"
    dirty = f", with uncommitted changes to {len(code['uncommitted'])} files" if code["uncommitted"] else ""
    return f"- lensmux code: commit {code['commit']}{dirty} (sources sha256 {code['sources_sha256']})"


def machine_lines(result: dict[str, Any]) -> list[str]:
    """The machine, the software and the code the figures were measured on (runner.result_header)."""
    m = result["machine"]
    return [
        f"- CPU: {m['cpu']}, `nproc` = {m['nproc']}; RAM {m['ram_gib']} GiB; Linux {m['kernel']}",
        f"- Python {m['python']}; {_servers(m)}",
        f"- load average (1, 5, 15 min) at the start: {', '.join(str(x) for x in m['load_avg_at_start'])}; "
        f"at the end: {', '.join(str(x) for x in m.get('load_avg_at_end', []))} (other work shared the machine)",
        f"- run started {result['started']}, took {result['elapsed_s']:.0f} s",
        code_line(result.get("code")),
    ]
