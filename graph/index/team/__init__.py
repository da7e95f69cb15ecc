"""A team's shared index read under a working tree: the overlay, consume and publish (issue 24)."""
