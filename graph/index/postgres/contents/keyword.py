"""FTS5's bm25() computed in SQL over the team store's postings (terms.py says which formula).

One query: every term of the expression reads its range of the (snapshot, term) index (a
prefix term the range of words it begins), the frequencies are weighted per column with
graph/index/sqlite/schema.py BM25_WEIGHTS (the contract's weights), and the IDF and length
normalisation come from the snapshot's row and token counts. A chunk's terms are added in
the expression's order, as FTS5 adds its phrases: a sum in the order the plan happens to
deliver rows differs in the last bits between plans (a parallel one, an index-only scan),
and so breaks equal scores differently; in this order a score does not depend on the plan.
"""

from __future__ import annotations

from typing import Any

import psycopg
from psycopg import sql

from lensmux.graph.index.postgres.contents.terms import query_terms
from lensmux.graph.index.sqlite.schema import BM25_WEIGHTS

K1 = 1.2
B = 0.75
IDF_FLOOR = 1e-6


def _prefix_end(prefix: str) -> str | None:
    """The smallest string above every string starting with prefix (C collation), if one exists."""
    last = ord(prefix[-1])
    return None if last >= 0x10FFFF else prefix[:-1] + chr(last + 1)


def bm25(
    conn: psycopg.Connection[Any], snapshot: int, expression: str, k: int, masked: list[int] | None = None
) -> list[tuple[int, float]]:
    """(chunk id, BM25), best first (ties by id), at most k, for a keyword expression; `masked` chunks left out.

    The statistics (N, avgdl, document frequencies) stay the snapshot's own, masked chunks
    included: a consumer's few changed files do not move them.
    """
    terms = query_terms(expression)
    if not terms or k <= 0:
        return []
    parts: list[sql.Composable] = []
    params: list[Any] = []
    for i, term in enumerate(terms):
        head = sql.SQL(
            "SELECT {} AS i, chunk_id, tf_names, tf_path, tf_body, terms FROM lensmux.postings WHERE snapshot = %s"
        ).format(sql.Literal(i))
        end = _prefix_end(term.text) if term.prefix else None
        if not term.prefix:
            parts.append(head + sql.SQL(" AND term = %s"))
            params += [snapshot, term.text]
        elif end is not None:
            parts.append(head + sql.SQL(" AND term >= %s AND term < %s"))
            params += [snapshot, term.text, end]
        else:
            parts.append(head + sql.SQL(" AND term >= %s"))
            params += [snapshot, term.text]
    w_names, w_path, w_body = BM25_WEIGHTS
    query = sql.SQL(
        "WITH hits AS ({hits}),"
        " freq AS (SELECT i, chunk_id, max(terms) AS len,"
        "   sum(tf_names * {wn}::float8 + tf_path * {wp}::float8 + tf_body * {wb}::float8) AS f"
        "   FROM hits GROUP BY i, chunk_id),"
        " df AS (SELECT i, count(*)::float8 AS n FROM freq GROUP BY i),"
        " stats AS (SELECT n_chunks::float8 AS rows, n_tokens::float8 / greatest(n_chunks, 1) AS avgdl"
        "   FROM lensmux.snapshots WHERE id = %s)"
        " SELECT freq.chunk_id, sum("
        "   CASE WHEN ln((stats.rows - df.n + 0.5) / (df.n + 0.5)) > 0"
        "          THEN ln((stats.rows - df.n + 0.5) / (df.n + 0.5)) ELSE {floor} END"
        "   * (freq.f * ({k1} + 1.0)) / (freq.f + {k1} * (1.0 - {b} + {b} * freq.len / stats.avgdl))"
        " ORDER BY i) AS score"
        " FROM freq JOIN df USING (i) CROSS JOIN stats WHERE NOT (freq.chunk_id = ANY(%s))"
        " GROUP BY freq.chunk_id ORDER BY score DESC, freq.chunk_id LIMIT %s"
    ).format(
        hits=sql.SQL(" UNION ALL ").join(parts),
        wn=sql.Literal(w_names),
        wp=sql.Literal(w_path),
        wb=sql.Literal(w_body),
        floor=sql.Literal(IDF_FLOOR),
        k1=sql.Literal(K1),
        b=sql.Literal(B),
    )
    rows = conn.execute(query, [*params, snapshot, masked or [], k]).fetchall()
    return [(int(r[0]), float(r[1])) for r in rows]
