"""The tools themselves: navigation, listing, edits previewed, search, and the settled diagnostics they wait for."""
