"""One snapshot's contents: reading and writing its files, chunks, vectors, keyword postings and learned graph."""
