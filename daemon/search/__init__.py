"""The daemon side of indexing and hybrid search: index runs, the search service and its HTTP API.

It drives `lensmux.graph` (which knows nothing of the daemon) through the
`SymbolSource` and `LspGateway` protocols implemented here over the
multiplexer's `InternalClient`; it must not reach into routing, sessions or
server processes, and the multiplexer must not import it.
"""
