"""The `lensmux` command line: every user command, the editors' stdio bridge and their rendering.

It talks to a running daemon only through the control socket
(`connect/control_client.py`) or as a byte pipe to a server socket (`connect/bridge.py`); it
must not import the multiplexer or the search side, whose state it sees only
as the JSON the daemon answers with.
"""
