"""A client's connection: the sockets it comes in on, its session, and what it declared in its `initialize`."""
