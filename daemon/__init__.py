"""The lensmux daemon: multiplexer, control socket, CLI and service glue."""
