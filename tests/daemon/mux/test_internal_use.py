"""What the daemon asks a server about stays open while it asks, whoever else lets documents go.

Indexing, searches and learning ask about documents concurrently. The learner closes the
documents kept open for it when it pauses, and the daemon keeps at most a cap of them open: a
document one of them is asking about at that moment must stay open (clangd answers a closed
document with an error).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from lensmux.adapters.registry import adapter_for
from lensmux.daemon.config import load_config
from lensmux.daemon.mux import internal_client
from lensmux.daemon.mux.instance import Instance, InstanceKey
from lensmux.daemon.mux.internal_client import InternalClient

pytestmark = [pytest.mark.anyio]


class _Registry:
    def __init__(self, instance: Instance) -> None:
        self.instance = instance

    def instances(self) -> list[Instance]:
        return [self.instance]


def _setup(tmp_path: Path) -> tuple[InternalClient, Instance, list[Path]]:
    config = load_config(tmp_path / "none.toml")
    cfg = config.servers["clangd"]
    inst = Instance(InstanceKey("clangd", cfg.fingerprint(), tmp_path), cfg, adapter_for(cfg), config.daemon)
    files = []
    for n in range(3):
        path = tmp_path / f"f{n}.c"
        path.write_text(f"int f{n};\n")
        files.append(path)
    registry: Any = _Registry(inst)
    return InternalClient(registry), inst, files


async def test_letting_documents_go_spares_the_one_being_asked_about(tmp_path: Path) -> None:
    client, inst, (busy, idle, _) = _setup(tmp_path)
    await client.ensure_open(inst, idle)
    async with client.using(inst, busy) as uri:
        assert await client.release_kept() == 1
        assert await client.release(inst, uri) is False
        assert inst.documents.get(uri) is not None, "closed while the daemon was asking about it"
        assert inst.documents.get(idle.as_uri()) is None
    # Once nobody asks about it, it goes like any other.
    assert await client.release_kept() == 1
    assert inst.documents.get(busy.as_uri()) is None


async def test_the_cap_makes_room_with_a_document_nobody_is_asking_about(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    client, inst, (first, second, third) = _setup(tmp_path)
    monkeypatch.setattr(internal_client, "OPEN_DOCUMENTS_CAP", 2)
    async with client.using(inst, first):
        await client.ensure_open(inst, second)
        await client.ensure_open(inst, third)
        assert inst.documents.get(first.as_uri()) is not None
        assert inst.documents.get(second.as_uri()) is None
