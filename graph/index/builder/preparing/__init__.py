"""One file made ready for the store: its symbols from the server's answer, its chunks, its rows."""
