"""Converting an index of schema 1 to schema 2 in place (issue 23: <= 3 KiB on disk a chunk).

Schema 1 kept a chunk's text twice, plain in `chunks.text` and again in the FTS5 table's
own content table. Schema 2 packs the text (chunk_text.py) and makes the FTS5 table's
content the view `chunks_fts_source`. The conversion is one transaction: a process killed
in the middle leaves the version 1 file as it was (SQLite rolls the transaction back on
the next open), and the next open converts it again. Nothing is embedded again and no
row changes but the packed text, so vectors, learned relations and ids all stay.

The keyword index is rebuilt from the view rather than copied, so its rows are exactly
what the view yields: what a later delete of those rows tells FTS5 (chunk_text.py).
"""

from __future__ import annotations

import logging
import sqlite3

from lensmux.graph.index.sqlite.schema import FTS_DDL, META_SCHEMA_VERSION, SCHEMA_VERSION

log = logging.getLogger(__name__)

MIGRATABLE_VERSION = "1"

# The column keeps its declared type TEXT in a converted file: SQLite's TEXT affinity
# leaves BLOB values alone, so packed text reads back the same as in a new file.
_STEPS = f"""
BEGIN IMMEDIATE;
DROP TABLE chunks_fts;
UPDATE chunks SET text = lensmux_pack(text) WHERE typeof(text) = 'text';
{FTS_DDL}
INSERT INTO chunks_fts(chunks_fts) VALUES ('rebuild');
UPDATE meta SET value = '{SCHEMA_VERSION}' WHERE key = '{META_SCHEMA_VERSION}';
"""


def migrate(conn: sqlite3.Connection) -> None:
    """Convert a schema 1 index on conn (functions registered) to the current schema, then VACUUM."""
    try:
        conn.executescript(_STEPS)
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    # The pages the second copy and the plain text took go back to the file system.
    conn.execute("VACUUM")
    log.info("converted index schema %s to %s in place", MIGRATABLE_VERSION, SCHEMA_VERSION)
