"""How a command reaches the daemon: control client, autostart, the stdio bridge, a root indexed on first use."""
