"""Whose settings a shared server uses: the server configuration's, never a client's.

`initializationOptions` come from the server config (adapters/base.py drops a
client's), `workspace/configuration` is answered from the config's `settings`
(server_requests.py), and a client's `workspace/didChangeConfiguration` reaches
the server only as a nudge carrying those same settings: the first editor to
connect, or the last to push settings, must not decide for every other client.
docs/sharing.md explains the choice.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from lensmux.daemon.wire import envelope as ev

if TYPE_CHECKING:
    from lensmux.daemon.mux.clients.client_session import ClientSession
    from lensmux.daemon.mux.instance import Instance

log = logging.getLogger(__name__)

METHOD = "workspace/didChangeConfiguration"


def configuration_nudge(instance: Instance, client: ClientSession) -> bytes:
    """The didChangeConfiguration the server gets when a client sends one: the configured settings."""
    log.debug("%s: %s from %s forwarded with the configured settings", instance.name, METHOD, client.name)
    return ev.notification(METHOD, ev.encode_value({"settings": instance.config.settings}))
