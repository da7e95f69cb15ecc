"""Human-readable rendering of `lensmux status`."""

from __future__ import annotations

import time
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
        if inst.get("language"):
            lines.append(f"             language: {inst['language']} (a client's locale)")
        if inst.get("recycles"):
            lines.append(f"             recycled {inst['recycles']}x for memory")
        if inst.get("indexing"):
            lines.append("             server is still indexing")
        if inst.get("prebind") not in (None, "off"):
            lines.append(f"             prebind: {inst['prebind']}")
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
    lines += render_indexes(status.get("index"))
    return "\n".join(lines)


def _ago(timestamp: Any) -> str:
    if not isinstance(timestamp, (int, float)) or not timestamp:
        return "never"
    seconds = max(0, int(time.time() - timestamp))
    if seconds < 120:
        return f"{seconds}s ago"
    if seconds < 7200:
        return f"{seconds // 60}m ago"
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(timestamp))


def render_indexes(index: Any) -> list[str]:
    """The search indexes: model state, then one line per root with files, chunks and last update."""
    if not isinstance(index, dict):
        return []
    model = index.get("model") or {}
    roots = index.get("roots") or []
    model_ids = sorted({str(r.get("model_id")) for r in roots if r.get("model_id")})
    state = str(model.get("state", "?"))
    if model.get("progress"):
        stage, fraction = model["progress"]
        state += f" ({stage} {float(fraction) * 100:.0f}%)"
    if model.get("query_adapter"):
        state += f"; query adapter: {model['query_adapter']}"
    lines = ["", f"indexes: model {', '.join(model_ids) or '-'}: {state}"]
    if not roots:
        lines.append("  (none; `lensmux search` or `lensmux index DIR` creates one)")
    for root in roots:
        progress = ""
        if root.get("running"):
            progress = f"  indexing {root.get('files_done', 0)}/{root.get('files_total', 0)} files"
            if root.get("coverage") is not None:
                # What a search answers from meanwhile (graph/index/progress.py, Progress.coverage).
                progress += f", searches cover {int(float(root['coverage']) * 100)}% of the files"
        error = root.get("error") or root.get("last_error")
        lines.append(
            f"  {root.get('state', '?')!s:<9} files {root.get('files') if root.get('files') is not None else '-':<6} "
            f"chunks {root.get('chunks') if root.get('chunks') is not None else '-':<7} "
            f"updated {_ago(root.get('finished_at'))}{progress}  {root.get('root')}"
        )
        graph = root.get("graph")
        if isinstance(graph, dict) and graph.get("learnable"):
            # Symbols searches had to ask live, learned first (daemon/search/graph_learning.py).
            bound = f" of at most {graph['queue_bound']:,}" if graph.get("queue_bound") else ""
            waiting = graph.get("queued_by_searches")
            queued = f"; {waiting}{bound} queued by searches" if waiting else ""
            lines.append(
                f"             call graph: {graph.get('learned', 0)}/{graph['learnable']} symbols learned"
                f" ({graph.get('state', '?')}{queued})"
            )
        shared = root.get("shared")
        if isinstance(shared, dict):
            # The files above are only those this tree changes; the rest come from the team's index.
            lines.append(
                f"             team index: commit {str(shared.get('commit', '?'))[:12]}"
                f" ({shared.get('masked_files', 0)} of its files answered locally)"
            )
        elif root.get("team_warning"):
            lines.append(f"             {root['team_warning']}")
        if error:
            lines.append(f"             error: {error}")
    for key, title, unit in (("vector_cache", "vector cache", "vectors"), ("symbol_cache", "symbol cache", "answers")):
        cache = index.get(key)
        if isinstance(cache, dict):
            lines.append(
                f"  {title}: {cache.get('entries', 0)} {unit}, {_mib(cache.get('bytes'))} of "
                f"{_mib(cache.get('max_bytes'))} MiB; {cache.get('hits', 0)} hits, {cache.get('misses', 0)} misses, "
                f"{cache.get('evicted', 0)} evicted  {cache.get('path', '')}"
            )
    memo = index.get("token_memo")
    if isinstance(memo, dict):
        lines.append(
            f"  token counts remembered: {memo.get('entries', 0)} of {memo.get('limit', 0)};"
            f" {memo.get('hits', 0)} hits, {memo.get('misses', 0)} misses"
        )
    caps = index.get("caps")
    if isinstance(caps, dict) and caps:
        lines.append("  caps: " + ", ".join(f"{key} {value}" for key, value in caps.items()))
    return lines


def _mib(value: Any) -> str:
    return f"{float(value) / (1024 * 1024):.1f}" if isinstance(value, (int, float)) else "?"
