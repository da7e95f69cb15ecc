"""Which files a root's index holds: the walk, its ignore rules, junk, and each file's language."""
