"""The per-rollout digests (transitions/sql/snapshot/rollout_digests.sql): sha256 (DuckDB's and spanrl_sha256,
OpenSSL's), the rows as text, the ordered string_agg, and DuckDB's hash() (fast, but not stable across DuckDB
versions: readers re-hash elsewhere)."""

import re
from pathlib import Path

BEFORE = "-- name: rollout_digests"
# the columns the digest hashes, as transitions/sql/snapshot/rollout_digests.sql lists them
_SQL = (Path(__file__).resolve().parents[2] / "transitions/sql/snapshot/rollout_digests.sql").read_text()
COLS = re.search(r"CAST\(ROW\((.*?)\) AS VARCHAR\)", _SQL, re.S)[1]
VARIANTS = {
    "the statement's query": lambda q: f"SELECT count(*), max(digest) FROM ({q})",
    "rows -> text only": f"SELECT sum(strlen(CAST(ROW({COLS}) AS VARCHAR))) FROM transition_rows",
    "string_agg, no sha256": f"SELECT sum(n) FROM (SELECT strlen(string_agg(CAST(ROW({COLS}) AS VARCHAR), chr(10) "
                             "ORDER BY step)) AS n FROM transition_rows GROUP BY rollout_id)",
    "sha256 per row": f"SELECT max(sha256(CAST(ROW({COLS}) AS VARCHAR))) FROM transition_rows",
    # transitions/hashing.py: what the statement calls now (OpenSSL by hashlib), the same hex digests
    "spanrl_sha256 per row": f"SELECT max(spanrl_sha256(CAST(ROW({COLS}) AS VARCHAR))) FROM transition_rows",
    "hash() per row": f"SELECT max(h) FROM (SELECT list(hash(ROW({COLS})) ORDER BY step) AS h FROM transition_rows "
                      "GROUP BY rollout_id)",
}
