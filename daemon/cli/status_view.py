"""Human-readable rendering of `lensmux status`."""

from __future__ import annotations

from typing import Any


def render_status(status: dict[str, Any]) -> str:
    """A few aligned lines per instance and client."""
    lines = [
        f"lensmux pid {status['pid']}  up {status['uptime_s']:.0f}s  sockets {status['runtime_dir']}",
        f"config: {status['config']}  servers: {', '.join(status['servers'])}",
        "",
        "instances:",
    ]
    instances = status.get("instances", [])
    if not instances:
        lines.append("  (none)")
    for inst in instances:
        lines.append(
            f"  {inst['server']:<10} {inst['state']:<10} pid {inst['pid'] or '-':<8} "
            f"clients {len(inst['clients']):<3} docs {inst['open_documents']:<4} "
            f"served {inst['requests_served']:<6} restarts {inst['restarts']}  "
            f"mem {inst.get('memory_mb', 0):.0f} MiB  {inst['root']}"
        )
        if inst.get("recycles"):
            lines.append(f"             recycled {inst['recycles']}x for memory")
        if inst.get("indexing"):
            lines.append("             server is still indexing")
        if inst.get("last_exit"):
            lines.append(f"             last exit: {inst['last_exit']}")
    lines += ["", "clients:"]
    clients = status.get("clients", [])
    if not clients:
        lines.append("  (none)")
    for client in clients:
        lines.append(
            f"  {client['name']:<24} {client['server']:<10} pid {client['pid'] or '-':<8} "
            f"requests {client['requests']:<6} connected {client['connected_for_s']:.0f}s"
        )
    return "\n".join(lines)
