"""The exact nearest vectors of a question, as both stores answer up to `exact_search_below`.

Up to that many vectors a store keeps one copy of them as a matrix and multiplies the question
with every row, instead of asking its approximate graph: at that size it costs milliseconds,
and two stores holding the same vectors then return the same list (two approximate graphs
each miss different neighbours). The embedded store reads the matrix out of its hnswlib
graph, the team store out of its snapshot's rows once; both rank here, so their order and
their treatment of equal similarities are one.
"""

from __future__ import annotations

from collections.abc import Collection

import numpy
import numpy.typing as npt

__all__ = ["nearest"]


def nearest(
    labels: npt.NDArray[numpy.int64],
    data: npt.NDArray[numpy.float32],
    question: npt.NDArray[numpy.float32],
    k: int,
    leave_out: Collection[int] = (),
) -> list[tuple[int, float]]:
    """The k rows most similar to question: (label, cosine), most similar first, equal ones by label.

    `data` holds unit-length rows in the order of `labels`; the question need not be unit
    length; labels in `leave_out` are never returned.
    """
    if k <= 0 or len(labels) == 0:
        return []
    query = numpy.asarray(question, dtype=numpy.float32).reshape(-1)
    norm = float(numpy.linalg.norm(query))
    scores = data @ (query / norm if norm > 0 else query)
    if leave_out:
        keep = numpy.flatnonzero(~numpy.isin(labels, numpy.fromiter(leave_out, dtype=numpy.int64)))
    else:
        keep = numpy.arange(len(labels))
    k = min(k, len(keep))
    if k == 0:
        return []
    top = keep[numpy.argpartition(-scores[keep], k - 1)[:k]] if k < len(keep) else keep
    ordered = top[numpy.lexsort((labels[top], -scores[top]))]
    return [(int(labels[i]), float(scores[i])) for i in ordered]
