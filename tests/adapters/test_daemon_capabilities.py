"""Every server is told the capabilities lsprotocol's types build, though the daemon ships them built.

adapters/capabilities_build.py declares the sets with lsprotocol; the daemon reads them from
capabilities.json so that it never imports lsprotocol. A change to the declaration that is
not written to the file would tell servers the old set.
"""

from __future__ import annotations

import json

from lensmux.adapters import capabilities, capabilities_build


def test_the_shipped_capabilities_are_the_ones_lsprotocol_builds() -> None:
    assert capabilities.daemon_client_capabilities() == capabilities_build.daemon_client_capabilities()
    assert capabilities_build.SHIPPED.read_text(encoding="utf-8") == capabilities_build.shipped_text(), (
        "capabilities.json is stale: run python -m lensmux.adapters.capabilities_build"
    )


def test_a_server_is_initialized_with_the_params_lsprotocol_builds_byte_for_byte() -> None:
    for root_uri, root_path, name, pid in (("file:///w/proj", "/w/proj", "proj", 4242), ("file:///", "/", "/", 1)):
        shipped = capabilities.daemon_initialize_params(root_uri, root_path, name, pid)
        built = capabilities_build.daemon_initialize_params(root_uri, root_path, name, pid)
        assert json.dumps(shipped) == json.dumps(built)


def test_the_daemons_own_initialize_is_the_one_lsprotocol_builds_byte_for_byte() -> None:
    for root_uri, pid in (("file:///w/proj", 4242), ("file:///", 1)):
        shipped = capabilities.internal_initialize_params(root_uri, pid)
        built = capabilities_build.internal_initialize_params(root_uri, pid)
        assert json.dumps(shipped) == json.dumps(built)


def test_each_server_gets_its_own_copy_to_tweak() -> None:
    first = capabilities.daemon_client_capabilities()
    first["general"]["positionEncodings"].append("utf-8")
    assert capabilities.daemon_client_capabilities()["general"]["positionEncodings"] == ["utf-16"]
