"""Adapter lookup by the `adapter` key of a server config."""

from __future__ import annotations

from lensmux.adapters.base import Adapter
from lensmux.adapters.clangd.clangd import ClangdAdapter
from lensmux.adapters.omnisharp.omnisharp import OmniSharpAdapter
from lensmux.adapters.pyright.pyright import PyrightAdapter
from lensmux.adapters.spec import ServerConfig

_ADAPTERS: dict[str, type[Adapter]] = {
    "generic": Adapter,
    "clangd": ClangdAdapter,
    "pyright": PyrightAdapter,
    "omnisharp": OmniSharpAdapter,
}


def adapter_for(config: ServerConfig) -> Adapter:
    """A fresh adapter for one instance; unknown names fall back to the generic one."""
    return _ADAPTERS.get(config.adapter, Adapter)(config)
