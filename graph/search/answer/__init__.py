"""From the graph to the answer: the rerank, the neighbour fill, reasons in words, the token-budgeted context."""
