"""Progress a server shows, routed to the clients whose it is, and what a fresh server said before it was useful."""
