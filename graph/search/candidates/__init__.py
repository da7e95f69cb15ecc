"""Stage 1: the candidates the text finds: vector and keyword hits fused, the query's anchors in front."""
