"""The multiplexer: everything a message touches between a client socket and a server process.

It owns instances (one server process per server config and root), their
supervision, request-id rewriting, documents, the response cache, the circuit
breaker and the routing of server requests and notifications. It knows the wire
format only through `lensmux.daemon.wire` and server quirks only through
`lensmux.adapters`; it must not know the command line, search or indexing,
which reach it only through `InternalClient` and `InstanceRegistry`.
"""
