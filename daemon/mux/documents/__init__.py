"""Open documents shared by an instance's clients: reference counts, versions, edits in any position encoding."""
