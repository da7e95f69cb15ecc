"""Which files of a working tree a shared index already answers for (issue 24).

A root that overlays a team's published index (graph/index/team/overlay.py) indexes locally only
the files whose content differs from the published one; the shared rows answer for the
rest. Content is compared by the sha256 of the file's bytes, as the index stores it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

from lensmux.graph.index.builder.files.walk import read_source


def unchanged(root: Path, rels: Iterable[str], baseline: Mapping[str, str], max_file_bytes: int) -> set[str]:
    """The paths among rels whose bytes on disk are the baseline's (path -> sha256)."""
    same: set[str] = set()
    for rel in rels:
        want = baseline.get(rel)
        if want is None:
            continue
        source = read_source(root / rel, max_file_bytes)
        if source is not None and source.sha256 == want:
            same.add(rel)
    return same
