"""What the commands print: status, search results, a progress bar."""
