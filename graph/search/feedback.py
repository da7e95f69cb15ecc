"""Pseudo-relevance feedback for the vector side: the query moved towards its first candidates.

Rocchio's update, q' = q / |q| + weight * mean of the candidates' stored vectors, then
normalised: the first fused candidates (found by either source) say what the question's
neighbourhood in the embedding space looks like, so a second vector search from q' finds
functions near the ones the keyword side matched, which a short question's own vector
does not reach. FusionWeights.feedback is the weight, feedback_depth the candidates.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy
import numpy.typing as npt

__all__ = ["feedback_vector"]


def _unit(vector: npt.NDArray[numpy.float32]) -> npt.NDArray[numpy.float32]:
    norm = float(numpy.linalg.norm(vector))
    return vector / norm if norm > 0 else vector


def feedback_vector(
    query: npt.NDArray[numpy.float32], neighbours: Sequence[npt.NDArray[numpy.float32]], weight: float
) -> npt.NDArray[numpy.float32]:
    """The unit vector of query + weight * the mean of the (unit) neighbours; the query itself if none."""
    q = _unit(numpy.asarray(query, dtype=numpy.float32).reshape(-1))
    if not neighbours or weight <= 0:
        return q
    centroid = numpy.mean([_unit(numpy.asarray(n, dtype=numpy.float32).reshape(-1)) for n in neighbours], axis=0)
    return _unit((q + numpy.float32(weight) * centroid).astype(numpy.float32))
